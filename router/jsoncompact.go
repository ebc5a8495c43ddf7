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
			colon := skipSpace(src, end)
			if !ok || colon >= len(src) || src[colon] != ':' {
				return dst, stack, errInvalidJSON
			}
			dst = append(append(dst, src[i:end]...), ':')
			i, state = colon+1, wantValue

		case wantValue:
			if i >= len(src) {
				return dst, stack, errInvalidJSON
			}
			// Scalars are scanned inline, not in a function of their
			// own: they are most of a payload, and a call per value cost
			// 10% in BenchmarkAppendCompactJSON.
			end, ok := 0, true
			switch src[i] {
			case '{':
				dst, stack, i, state = appendOpen(dst, stack, src, i, '}', wantKey)
				continue
			case '[':
				dst, stack, i, state = appendOpen(dst, stack, src, i, ']', wantValue)
				continue
			case '"':
				end, ok = scanString(src, i)
			case 't':
				end, ok = i+4, hasLiteral(src, i, "true")
			case 'f':
				end, ok = i+5, hasLiteral(src, i, "false")
			case 'n':
				end, ok = i+4, hasLiteral(src, i, "null")
			default:
				end, ok = scanNumber(src, i)
			}
			if !ok {
				return dst, stack, errInvalidJSON
			}
			dst = append(dst, src[i:end]...)
			i, state = end, afterValue

		case afterValue:
			if len(stack) == 0 {
				if i != len(src) {
					return dst, stack, errInvalidJSON // trailing data
				}
				return dst, stack, nil
			}
			var ok bool
			if dst, stack, i, state, ok = appendNext(dst, stack, src, i); !ok {
				return dst, stack, errInvalidJSON
			}
		}
	}
}

// appendOpen copies the '{' or '[' at src[i]. An empty container is
// copied whole and is a complete value; otherwise closer is pushed on stack
// and next (a key or a value) must follow.
func appendOpen(dst, stack, src []byte, i int, closer byte, next int) ([]byte, []byte, int, int) {
	dst = append(dst, src[i])
	i = skipSpace(src, i+1)
	if i < len(src) && src[i] == closer {
		return append(dst, closer), stack, i + 1, afterValue
	}
	return dst, append(stack, closer), i, next
}

// appendNext copies what follows a value inside the container whose closer
// is on top of stack: a ',' (then a key or a value must follow) or the
// closer itself (popped).
func appendNext(dst, stack, src []byte, i int) ([]byte, []byte, int, int, bool) {
	if i >= len(src) {
		return dst, stack, i, afterValue, false
	}
	closer := stack[len(stack)-1]
	switch src[i] {
	case ',':
		if closer == '}' {
			return append(dst, ','), stack, i + 1, wantKey, true
		}
		return append(dst, ','), stack, i + 1, wantValue, true
	case closer:
		return append(dst, closer), stack[:len(stack)-1], i + 1, afterValue, true
	}
	return dst, stack, i, afterValue, false
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
