#!/usr/bin/env python3
"""registry-decode: the independent decoder of Confluent wire-format records.

Reads Kafka record values (or keys) on stdin, one per line, checks the
wire format (magic byte 0, a 4-byte big-endian schema id, the body), fetches
the writer's schema by id from the schema registry (GET /schemas/ids/{id}),
decodes the body with Apache Avro's own library (avro.io) or parses it and
validates it against the JSON Schema with python-jsonschema, and prints the
decoded JSON, one line per input line.

Input lines, detected one by one:
  00000000011a...          hex (a wire-format record starts with 00)
  AAAAAAE...               base64 (starts with A)
  {"key":K,"value":V}      JSON: K and V hex or base64 strings, or null
                           (a tombstone); other members are kept as they are
Output: the decoded value, or for a JSON line the same object with "key" and
"value" decoded (and "key_schema_id"/"value_schema_id" with --ids).

Avro logical types are left as their underlying type (int, long, bytes...),
as JsonConverter writes them; bytes are printed as base64, like JsonConverter.
Use --logical to let avro convert them (dates, decimals) instead.

Run it with scripts/pyenv's python:
  "$(scripts/pyenv)" scripts/registry-decode.py --registry http://127.0.0.1:8081 <values
Exit status 1 when a line could not be decoded (it is reported on stderr and
"null" is not printed for it: the line is skipped).
"""
import argparse
import base64
import binascii
import decimal
import io
import json
import math
import re
import struct
import sys
import urllib.error
import urllib.request

import avro.errors
import avro.io
import avro.schema
import jsonschema

HEX = re.compile(r"^[0-9a-fA-F]+$")


class Registry:
    """Fetches writer schemas by id, once each."""

    def __init__(self, urls, auth, logical):
        self.urls = [u.rstrip("/") for u in urls]
        self.auth = auth
        self.logical = logical
        self.cache = {}

    def get(self, schema_id):
        if schema_id in self.cache:
            return self.cache[schema_id]
        last = None
        for url in self.urls:
            req = urllib.request.Request("%s/schemas/ids/%d" % (url, schema_id))
            req.add_header("Accept", "application/vnd.schemaregistry.v1+json")
            if self.auth:
                req.add_header("Authorization", self.auth)
            try:
                with urllib.request.urlopen(req, timeout=10) as resp:
                    entry = json.load(resp)
                break
            except urllib.error.HTTPError as e:
                raise DecodeError("GET %s/schemas/ids/%d: HTTP %d %s" % (url, schema_id, e.code, e.read().decode(errors="replace")))
            except OSError as e:
                last = e
        else:
            raise DecodeError("GET /schemas/ids/%d: no registry answered (%s)" % (schema_id, last))
        if entry.get("references"):
            raise DecodeError("schema %d has references, which this decoder does not resolve" % schema_id)
        kind = entry.get("schemaType", "AVRO")
        text = entry["schema"]
        if kind == "AVRO":
            parsed = json.loads(text)
            if not self.logical:
                parsed = strip_logical(parsed)
            compiled = ("AVRO", avro.schema.parse(json.dumps(parsed)))
        elif kind == "JSON":
            schema = json.loads(text)
            cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
            cls.check_schema(schema)
            compiled = ("JSON", cls(schema))
        else:
            raise DecodeError("schema %d is %s: only AVRO and JSON are decoded" % (schema_id, kind))
        self.cache[schema_id] = compiled
        return compiled


class DecodeError(Exception):
    pass


def strip_logical(s):
    """The schema with every logicalType removed: the underlying values."""
    if isinstance(s, list):
        return [strip_logical(x) for x in s]
    if not isinstance(s, dict):
        return s
    return {k: strip_logical(v) for k, v in s.items() if k != "logicalType"}


def to_json(v):
    """avro's Python values as JsonConverter would write them."""
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    if isinstance(v, dict):
        return {k: to_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [to_json(x) for x in v]
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, float) and not math.isfinite(v):
        # JsonConverter (Jackson's QUOTE_NON_NUMERIC_NUMBERS) writes these
        # as strings.
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return v


def raw_bytes(text):
    """Hex when the text is hex starting with 00 (a wire-format record),
    else base64, else hex (a record with another first byte)."""
    text = text.strip()
    is_hex = HEX.match(text) is not None and len(text) % 2 == 0
    if is_hex and text.startswith("00"):
        return binascii.unhexlify(text)
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error as e:
        if is_hex:
            return binascii.unhexlify(text)
        raise DecodeError("neither hex nor base64: %s" % e)


def decode(registry, text):
    """(schema id, decoded value) of one wire-format record."""
    data = raw_bytes(text)
    if len(data) < 5:
        raise DecodeError("%d bytes: shorter than the 5-byte wire-format header" % len(data))
    if data[0] != 0:
        raise DecodeError("magic byte %d, not 0" % data[0])
    (schema_id,) = struct.unpack(">I", data[1:5])
    kind, compiled = registry.get(schema_id)
    body = data[5:]
    if kind == "AVRO":
        buf = io.BytesIO(body)
        value = avro.io.DatumReader(compiled).read(avro.io.BinaryDecoder(buf))
        if buf.tell() != len(body):
            raise DecodeError("schema %d: %d bytes left after the Avro datum" % (schema_id, len(body) - buf.tell()))
        return schema_id, to_json(value)
    try:
        value = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise DecodeError("schema %d: the body is not JSON: %s" % (schema_id, e))
    errors = sorted(validation_errors(compiled, value), key=lambda e: list(e.path))
    if errors:
        raise DecodeError("schema %d: the body is not valid: %s at %s" % (schema_id, errors[0].message, list(errors[0].path)))
    return schema_id, value


NON_FINITE = ("NaN", "Infinity", "-Infinity")


def java_non_finite(error):
    """Whether a validation error is a float or double that is not finite,
    which JsonSchemaConverter writes as the string of Java's text (Jackson's
    JsonGenerator with QUOTE_NON_NUMERIC_NUMBERS, its default) where the
    schema says {"type":"number","connect.type":"float64"}: Confluent's own
    bodies fail that check (json.fail.invalid.schema is off by default)."""
    return (error.validator == "type" and error.validator_value == "number"
            and error.instance in NON_FINITE
            and isinstance(error.schema, dict)
            and error.schema.get("connect.type") in ("float32", "float64"))


def non_finite_paths(errors):
    """The paths of the java_non_finite errors, in oneOf branches too."""
    for e in errors:
        if java_non_finite(e):
            yield list(e.absolute_path)
        yield from non_finite_paths(e.context or [])


def validation_errors(compiled, value):
    """The body's errors, Java's strings for floats that are not finite read
    as the numbers they stand for (a copy is changed, not value)."""
    root = [json.loads(json.dumps(value))]
    while True:
        errors = list(compiled.iter_errors(root[0]))
        paths = list(non_finite_paths(errors))
        if not paths:
            return errors
        for path in paths:
            parent, path = root, [0] + path
            for step in path[:-1]:
                parent = parent[step]
            parent[path[-1]] = float(parent[path[-1]].replace("Infinity", "inf"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--registry", required=True, help="the registry's URL, or several separated by commas")
    ap.add_argument("--basic", help="user:password for HTTP basic auth")
    ap.add_argument("--bearer", help="a bearer token")
    ap.add_argument("--ids", action="store_true", help="add the schema ids to the output")
    ap.add_argument("--logical", action="store_true", help="let avro convert logical types")
    args = ap.parse_args()
    auth = None
    if args.basic:
        auth = "Basic " + base64.b64encode(args.basic.encode()).decode()
    elif args.bearer:
        auth = "Bearer " + args.bearer
    registry = Registry(args.registry.split(","), auth, args.logical)
    failed = 0
    for n, line in enumerate(sys.stdin, 1):
        line = line.strip()
        if not line:
            continue
        try:
            if line.startswith("{"):
                rec = json.loads(line)
                for part in ("key", "value"):
                    if rec.get(part) is not None:
                        sid, rec[part] = decode(registry, rec[part])
                        if args.ids:
                            rec[part + "_schema_id"] = sid
                out = rec
            else:
                sid, out = decode(registry, line)
                if args.ids:
                    out = {"schema_id": sid, "value": out}
        except (DecodeError, jsonschema.SchemaError, avro.errors.AvroException, ValueError, EOFError) as e:
            failed += 1
            print("registry-decode: line %d: %s" % (n, e), file=sys.stderr)
            continue
        print(json.dumps(out, separators=(",", ":"), ensure_ascii=False))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
