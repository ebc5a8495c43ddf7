"""The independent check of registry/jsonschema (TestIndependentValidation).

Reads JSON lines {"case","schema","body","payload"} (schema and body as the
Go codec wrote them, payload as the router wrote it) and, for each, checks
with python-jsonschema that the schema is a valid draft-07 schema (the
registry's default for a schema without "$schema") and that the body is
valid against it, then compares the body with the payload: the same values
(numbers exactly, bytes as their base64 decoding), every payload field of the
schema kept, an absent or null field null or the schema's default, map
entries as JsonSchemaData writes them. Prints "ok CASE" or "FAIL CASE: why"
per line and exits 1 on any failure.
"""
import base64
import decimal
import json
import sys

import jsonschema


def load(text):
    return json.loads(text, parse_float=decimal.Decimal, parse_int=int)


def nonnull(schema):
    """The non-null member of an optional oneOf, else the schema itself."""
    if "oneOf" in schema:
        subs = [s for s in schema["oneOf"] if s.get("type") != "null"]
        assert len(subs) == 1, "oneOf with %d non-null members" % len(subs)
        return subs[0]
    return schema


def default_of(schema):
    return nonnull(schema).get("default", None)


def compare(schema, body, payload, path):
    if body is None:
        assert payload is None or schema.get("default") is not None, "%s: null body for %r" % (path, payload)
        return
    s = nonnull(schema)
    if payload is None:
        assert body == s.get("default"), "%s: %r for a null payload, default %r" % (path, body, s.get("default"))
        return
    typ, ctype = s.get("type"), s.get("connect.type")
    if typ == "object" and ctype != "map":
        props = s.get("properties", {})
        for k, v in body.items():
            assert k in props, "%s: body field %s not in the schema" % (path, k)
            p = payload.get(k)
            if p is None:
                assert v is None or v == default_of(props[k]), "%s.%s: %r for an absent payload field" % (path, k, v)
            else:
                compare(props[k], v, p, path + "." + k)
        for k, p in payload.items():
            if k in props and p is not None:
                assert k in body, "%s: payload field %s missing from the body" % (path, k)
        return
    if typ == "object" and ctype == "map":
        assert set(body) == set(payload), "%s: map keys %s != %s" % (path, sorted(body), sorted(payload))
        for k in body:
            compare(s["additionalProperties"], body[k], payload[k], path + "{" + k + "}")
        return
    if typ == "array" and ctype == "map":
        pairs = list(payload.items()) if isinstance(payload, dict) else [tuple(p) for p in payload]
        assert len(body) == len(pairs), "%s: %d entries != %d" % (path, len(body), len(pairs))
        props = s["items"]["properties"]
        for e, (k, v) in zip(sorted(body, key=lambda e: json.dumps(e["key"], default=str)), sorted(pairs, key=lambda p: json.dumps(p[0], default=str))):
            compare(props["key"], e["key"], k, path + "{key}")
            compare(props["value"], e["value"], v, path + "{value}")
        return
    if typ == "array":
        assert isinstance(body, list) and len(body) == len(payload), "%s: arrays differ in length" % path
        for i, (b, p) in enumerate(zip(body, payload)):
            compare(s["items"], b, p, "%s[%d]" % (path, i))
        return
    if typ in ("integer", "number"):
        assert decimal.Decimal(body) == decimal.Decimal(payload), "%s: %s != %s" % (path, body, payload)
        if typ == "integer":
            assert isinstance(body, int), "%s: %r is not an integer" % (path, body)
        return
    if ctype == "bytes":
        assert base64.b64decode(body, validate=True) == base64.b64decode(payload, validate=True), "%s: bytes differ" % path
        return
    assert body == payload, "%s: %r != %r" % (path, body, payload)


def main():
    failed = 0
    for line in sys.stdin:
        c = json.loads(line)
        try:
            schema = json.loads(c["schema"])
            jsonschema.Draft7Validator.check_schema(schema)
            body = load(c["body"])
            jsonschema.Draft7Validator(schema).validate(json.loads(c["body"]))
            compare(load(c["schema"]), body, load(c["payload"]), "$")
            print("ok", c["case"])
        except (AssertionError, jsonschema.ValidationError, jsonschema.SchemaError) as e:
            failed += 1
            print("FAIL %s: %s" % (c["case"], str(e).splitlines()[0]))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
