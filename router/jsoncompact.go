package router

import "errors"

// errInvalidJSON is returned by appendCompactJSON for text that is not one
// JSON value. Only a text or varchar payload can hit it: PostgreSQL
// validates json and jsonb on input.
var errInvalidJSON = errors.New("not valid JSON")

// Compactor states.
const (
	wantValue  = iota // a value must come next
	wantKey           // an object key (after '{' or ',')
	afterValue        // ',' or a closing bracket, or the end
)

// appendCompactJSON appends src to dst with the insignificant whitespace
// removed and everything else copied byte for byte: number literals as
// written (199.00 stays 199.00), strings with their escapes, keys in their
// order, nulls and empty containers. It validates as it goes, in one pass,
// without recursion; stack is scratch space for the open brackets, returned
// for reuse. On error dst holds a partial result and must be truncated by
// the caller.
//
// This is the lossless replacement for Debezium's Jackson round trip,
// which rewrites numbers and drops nulls and empty arrays.
func appendCompactJSON(dst, src, stack []byte) ([]byte, []byte, error) {
	stack = stack[:0]
	state := wantValue
	i := 0
	for {
		i = skipSpace(src, i)
		switch state {
		case wantKey:
			if i >= len(src) || src[i] != '"' {
				return dst, stack, errInvalidJSON
			}
			end, ok := scanString(src, i)
			if !ok {
				return dst, stack, errInvalidJSON
			}
			dst = append(dst, src[i:end]...)
			i = skipSpace(src, end)
			if i >= len(src) || src[i] != ':' {
				return dst, stack, errInvalidJSON
			}
			dst = append(dst, ':')
			i++
			state = wantValue

		case wantValue:
			if i >= len(src) {
				return dst, stack, errInvalidJSON
			}
			switch c := src[i]; c {
			case '{', '[':
				dst = append(dst, c)
				i = skipSpace(src, i+1)
				closer := byte('}')
				if c == '[' {
					closer = ']'
				}
				if i < len(src) && src[i] == closer {
					dst = append(dst, closer)
					i++
					state = afterValue
					continue
				}
				stack = append(stack, closer)
				if c == '{' {
					state = wantKey
				}
				continue
			case '"':
				end, ok := scanString(src, i)
				if !ok {
					return dst, stack, errInvalidJSON
				}
				dst = append(dst, src[i:end]...)
				i = end
			case 't':
				if !hasLiteral(src, i, "true") {
					return dst, stack, errInvalidJSON
				}
				dst = append(dst, "true"...)
				i += 4
			case 'f':
				if !hasLiteral(src, i, "false") {
					return dst, stack, errInvalidJSON
				}
				dst = append(dst, "false"...)
				i += 5
			case 'n':
				if !hasLiteral(src, i, "null") {
					return dst, stack, errInvalidJSON
				}
				dst = append(dst, "null"...)
				i += 4
			default:
				end, ok := scanNumber(src, i)
				if !ok {
					return dst, stack, errInvalidJSON
				}
				dst = append(dst, src[i:end]...)
				i = end
			}
			state = afterValue

		case afterValue:
			if len(stack) == 0 {
				if i != len(src) {
					return dst, stack, errInvalidJSON // trailing data
				}
				return dst, stack, nil
			}
			if i >= len(src) {
				return dst, stack, errInvalidJSON
			}
			closer := stack[len(stack)-1]
			switch src[i] {
			case ',':
				dst = append(dst, ',')
				i++
				if closer == '}' {
					state = wantKey
				} else {
					state = wantValue
				}
			case closer:
				dst = append(dst, closer)
				i++
				stack = stack[:len(stack)-1]
			default:
				return dst, stack, errInvalidJSON
			}
		}
	}
}

// skipSpace skips JSON's four whitespace characters.
func skipSpace(src []byte, i int) int {
	for i < len(src) {
		switch src[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func hasLiteral(src []byte, i int, lit string) bool {
	return len(src)-i >= len(lit) && string(src[i:i+len(lit)]) == lit
}

// scanString checks the string starting at src[i] == '"' and returns the
// index just past its closing quote. Bytes >= 0x80 pass through unchecked,
// as encoding/json's validator lets them.
func scanString(src []byte, i int) (int, bool) {
	i++
	for i < len(src) {
		c := src[i]
		switch {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			if i+1 >= len(src) {
				return 0, false
			}
			switch src[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(src)-i < 6 || !isHex(src[i+2]) || !isHex(src[i+3]) || !isHex(src[i+4]) || !isHex(src[i+5]) {
					return 0, false
				}
				i += 6
			default:
				return 0, false
			}
		default:
			i++
		}
	}
	return 0, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// scanNumber checks the JSON number at src[i] and returns the index just
// past it: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(src []byte, i int) (int, bool) {
	if i < len(src) && src[i] == '-' {
		i++
	}
	switch {
	case i >= len(src):
		return 0, false
	case src[i] == '0':
		i++
	case src[i] >= '1' && src[i] <= '9':
		i = skipDigits(src, i)
	default:
		return 0, false
	}
	if i < len(src) && src[i] == '.' {
		j := skipDigits(src, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		j := skipDigits(src, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func skipDigits(src []byte, i int) int {
	for i < len(src) && src[i] >= '0' && src[i] <= '9' {
		i++
	}
	return i
}
