"""Decodes Avro bodies with Apache Avro's own Python library (PyPI avro),
the independent check of registry/avro's encoder (TestPythonDecode).

stdin: one JSON object a line, {"schema": <the registered schema text>,
"body": <base64 of the Avro body>}; stdout: one JSON line each, the datum
read by avro.io.DatumReader with the writer schema parsed by
avro.schema.parse (logical types as JsonConverter writes them, bytes in base64, an infinity as 1 followed by 400 zeros, NaN as "NaN"), or
{"error": ...}. A body with bytes left after the datum is an error.
"""
import base64
import datetime
import decimal
import io
import json
import math
import sys

import avro.io
import avro.schema


EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def plain(v):
    # Logical types back to what JsonConverter writes: a decimal's unscaled
    # two's-complement bytes (Java's BigInteger.toByteArray), days, millis.
    if isinstance(v, decimal.Decimal):
        sign, digits, _ = v.as_tuple()
        n = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
        v = n.to_bytes(n.bit_length() // 8 + 1, "big", signed=True)
    if isinstance(v, datetime.datetime):
        return (v - EPOCH) // datetime.timedelta(milliseconds=1)
    if isinstance(v, datetime.date):
        return (v - datetime.date(1970, 1, 1)).days
    if isinstance(v, datetime.time):
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1000 + v.microsecond // 1000
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, float) and math.isinf(v):
        # An integer too large for a double: JSON that reads back as one.
        return 10**400 if v > 0 else -(10**400)
    return v


def dumps(v):
    return json.dumps(v, ensure_ascii=False, allow_nan=False)


def main():
    schemas = {}
    for line in sys.stdin:
        req = json.loads(line)
        try:
            text = req["schema"]
            if text not in schemas:
                schemas[text] = avro.schema.parse(text)
            schema = schemas[text]
            body = base64.b64decode(req["body"])
            buf = io.BytesIO(body)
            datum = avro.io.DatumReader(schema).read(avro.io.BinaryDecoder(buf))
            if buf.tell() != len(body):
                raise ValueError("%d bytes left after the datum" % (len(body) - buf.tell()))
            print(dumps(plain(datum)))
        except Exception as e:  # one line per request, whatever failed
            print(json.dumps({"error": "%s: %s" % (type(e).__name__, e)}))
        sys.stdout.flush()


main()
