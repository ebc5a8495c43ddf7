package router

import (
	"encoding/base64"
	"errors"

	"github.com/outboxrelay/outboxrelay/capture"
)

// PostgreSQL type OIDs the router treats specially (pg_type.oid; fixed for
// built-in types).
const (
	oidBool        = 16
	oidBytea       = 17
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidText        = 25
	oidOID         = 26
	oidJSON        = 114
	oidXML         = 142
	oidFloat4      = 700
	oidFloat8      = 701
	oidTimestamp   = 1114
	oidTimestampTZ = 1184
	oidNumeric     = 1700
	oidUUID        = 2950
	oidJSONB       = 3802
)

func isInteger(oid uint32) bool {
	return oid == oidInt2 || oid == oidInt4 || oid == oidInt8 || oid == oidOID
}

// isStringish reports whether Debezium hands the column to the EventRouter
// as a Java String, the only kind of payload it tries to expand.
func isStringish(oid uint32) bool {
	switch oid {
	case oidBool, oidBytea, oidInt2, oidInt4, oidInt8, oidOID, oidFloat4, oidFloat8, oidNumeric:
		return false
	}
	return true
}

// appendText appends the value as Kafka Connect's SimpleHeaderConverter
// (and StringConverter) writes it: booleans as true/false (PostgreSQL's
// text is t/f), bytea as padded Base64 (PostgreSQL's text is \x hex), uuid
// in lower case, and every other type as PostgreSQL's text. scratch is
// reusable space for decoding bytea. The caller handles NULL.
func appendText(dst []byte, v *capture.Column, scratch *[]byte) ([]byte, error) {
	switch v.OID {
	case oidBool:
		return appendBool(dst, v.Text)
	case oidBytea:
		raw, err := decodeBytea((*scratch)[:0], v.Text)
		*scratch = raw
		if err != nil {
			return dst, err
		}
		return base64.StdEncoding.AppendEncode(dst, raw), nil
	case oidUUID:
		return appendLower(dst, v.Text), nil
	}
	return append(dst, v.Text...), nil
}

func appendBool(dst, text []byte) ([]byte, error) {
	switch string(text) {
	case "t", "true":
		return append(dst, "true"...), nil
	case "f", "false":
		return append(dst, "false"...), nil
	}
	return dst, errors.New("boolean text is neither t nor f")
}

func appendLower(dst, text []byte) []byte {
	for _, c := range text {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// appendJSONValue appends the value as Kafka Connect's JsonConverter writes
// the Connect value Debezium makes of the column: integers as numbers,
// booleans, bytea as a Base64 string, uuid/json/text as strings, numeric
// according to decimal.handling.mode.
func appendJSONValue(dst []byte, v *capture.Column, decimalMode string, scratch *[]byte) ([]byte, error) {
	if v.Null {
		return append(dst, "null"...), nil
	}
	switch v.OID {
	case oidInt2, oidInt4, oidInt8, oidOID:
		// The whole text must be one JSON number: "00" scans as "0"
		// followed by junk.
		if end, ok := scanNumber(v.Text, 0); !ok || end != len(v.Text) {
			return dst, errors.New("integer text is not a number")
		}
		return append(dst, v.Text...), nil
	case oidFloat4, oidFloat8:
		// NaN and ±Infinity are strings, as Jackson writes them.
		if end, ok := scanNumber(v.Text, 0); ok && end == len(v.Text) {
			return append(dst, v.Text...), nil
		}
		return AppendJSONString(dst, v.Text), nil
	case oidNumeric:
		if end, ok := scanNumber(v.Text, 0); decimalMode == "double" && ok && end == len(v.Text) {
			return append(dst, v.Text...), nil
		}
		return AppendJSONString(dst, v.Text), nil
	case oidBool:
		return appendBool(dst, v.Text)
	case oidBytea, oidUUID:
		dst = append(dst, '"')
		dst, err := appendText(dst, v, scratch)
		return append(dst, '"'), err
	}
	return AppendJSONString(dst, v.Text), nil
}

// AppendJSONString appends s to dst as a JSON string literal escaped the
// way Jackson's JsonGenerator (inside Kafka Connect's JsonConverter, and so
// in every record Debezium writes) escapes it: \" \\ \b \t \n \f \r, the
// other control characters below 0x20 as \u00XX with upper-case hex, and
// everything else as is, including '/', DEL and non-ASCII UTF-8. It is the
// one escaper of the project: the router's records and the dead-letter
// topic's headers and row dumps use it. s is a string or a []byte.
func AppendJSONString[S ~string | ~[]byte](dst []byte, s S) []byte {
	const hex = "0123456789ABCDEF"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		start = i + 1
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// decodeBytea decodes PostgreSQL's bytea text output: the hex format
// (\x0aff, the default since 9.0) or the older escape format (bytes as is,
// \\ for a backslash, \ooo octal for the rest).
func decodeBytea(dst, text []byte) ([]byte, error) {
	if len(text) >= 2 && text[0] == '\\' && text[1] == 'x' {
		hex := text[2:]
		if len(hex)%2 != 0 {
			return dst, errors.New("bytea hex text has an odd number of digits")
		}
		for i := 0; i < len(hex); i += 2 {
			hi, ok1 := unhex(hex[i])
			lo, ok2 := unhex(hex[i+1])
			if !ok1 || !ok2 {
				return dst, errors.New("bytea hex text has a non-hex digit")
			}
			dst = append(dst, hi<<4|lo)
		}
		return dst, nil
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		switch {
		case i+1 < len(text) && text[i+1] == '\\':
			dst = append(dst, '\\')
			i++
		case i+3 < len(text) && isOctal(text[i+1]) && isOctal(text[i+2]) && isOctal(text[i+3]):
			dst = append(dst, (text[i+1]-'0')<<6|(text[i+2]-'0')<<3|(text[i+3]-'0'))
			i += 3
		default:
			return dst, errors.New("bytea escape text has a bad backslash sequence")
		}
	}
	return dst, nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// isBlank reports whether text is empty after Java's String.trim(), which
// strips every byte <= ' '. Debezium's tombstone rule uses it.
func isBlank(text []byte) bool {
	for _, c := range text {
		if c > ' ' {
			return false
		}
	}
	return true
}
