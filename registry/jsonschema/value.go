package jsonschema

import "encoding/json"

// schemaValue turns a default's body into the "default" of the schema
// text: JsonSchemaData.toJsonSchemaValue hands everit a Java value (a
// JSONObject or JSONArray for a struct, map or array), org.json prints it
// (a plain decimal without trailing zeros, objects in HashMap order) and
// Jackson re-reads it (numbers as BigDecimal).
func schemaValue(body []byte) ([]byte, error) {
	v, err := decode(body)
	if err != nil {
		return nil, err
	}
	return appendSchemaValue(nil, v), nil
}

func appendSchemaValue(dst []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		if x {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case json.Number:
		return append(dst, bigDecimalText(orgJSONNumber(string(x)))...)
	case string:
		return appendJacksonString(dst, x)
	case []any:
		dst = append(dst, '[')
		for i, it := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendSchemaValue(dst, it)
		}
		return append(dst, ']')
	case *object:
		// new JSONObject(text) puts into a new HashMap in the text's order.
		dst = append(dst, '{')
		for i, k := range newHashMapPut(x.keys) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJacksonString(dst, k)
			dst = append(dst, ':')
			dst = appendSchemaValue(dst, x.vals[k])
		}
		return append(dst, '}')
	}
	return dst
}
