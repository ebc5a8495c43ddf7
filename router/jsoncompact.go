package router

import "errors"

// errInvalidJSON is returned by (*compactor).append for text that is not one
// JSON value. Only a text or varchar payload can hit it: PostgreSQL
// validates json and jsonb on input.
var errInvalidJSON = errors.New("not valid JSON")

// Compactor states.
const (
	wantValue  = iota // a value must come next
	wantKey           // an object key (after '{' or ',')
	afterValue        // ',' or a closing bracket, or the end
)

// compactor compacts JSON payloads (append), reusing its buffers. With
// shapes set it also writes each payload's shape in the same pass, for
// the schema inference's cache (shape.go): the compacted JSON's structure
// and object keys (as written) with each string replaced by s, each
// number by its Connect type's letter (numberLetter), true and false by b,
// null by n.
type compactor struct {
	stack  []byte // the open brackets
	shapes bool
	shape  []byte // the last payload's shape, when shapes is set
}

// append appends src to dst with the insignificant whitespace removed and
// everything else copied byte for byte: number literals as written
// (199.00 stays 199.00), strings with their escapes, keys in their order,
// nulls and empty containers. It validates as it goes, in one pass,
// without recursion. On error dst holds a partial result and must be
// truncated by the caller, and the shape is not valid.
//
// This is the lossless replacement for Debezium's Jackson round trip,
// which rewrites numbers and drops nulls and empty arrays.
func (c *compactor) append(dst, src []byte) ([]byte, error) {
	c.stack, c.shape = c.stack[:0], c.shape[:0]
	state := wantValue
	i := 0
	for {
		i = skipSpace(src, i)
		mark := len(dst) // what dst gains, the shape gains too (but for scalars)
		switch state {
		case wantKey:
			if i >= len(src) || src[i] != '"' {
				return dst, errInvalidJSON
			}
			end, ok := scanString(src, i)
			colon := skipSpace(src, end)
			if !ok || colon >= len(src) || src[colon] != ':' {
				return dst, errInvalidJSON
			}
			dst = append(append(dst, src[i:end]...), ':')
			i, state = colon+1, wantValue

		case wantValue:
			if i >= len(src) {
				return dst, errInvalidJSON
			}
			// Scalars are scanned inline, not in a function of their
			// own: they are most of a payload, and a call per value cost
			// 10% in BenchmarkAppendCompactJSON.
			end, ok, letter := 0, true, byte('s')
			switch src[i] {
			case '{':
				dst, c.stack, i, state = appendOpen(dst, c.stack, src, i, '}', wantKey)
				c.mirror(dst[mark:])
				continue
			case '[':
				dst, c.stack, i, state = appendOpen(dst, c.stack, src, i, ']', wantValue)
				c.mirror(dst[mark:])
				continue
			case '"':
				end, ok = scanString(src, i)
			case 't':
				end, ok, letter = i+4, hasLiteral(src, i, "true"), 'b'
			case 'f':
				end, ok, letter = i+5, hasLiteral(src, i, "false"), 'b'
			case 'n':
				end, ok, letter = i+4, hasLiteral(src, i, "null"), 'n'
			default:
				end, ok = scanNumber(src, i)
				if ok && c.shapes {
					letter = numberLetter(src[i:end])
				}
			}
			if !ok {
				return dst, errInvalidJSON
			}
			dst = append(dst, src[i:end]...)
			if c.shapes {
				c.shape = append(c.shape, letter)
			}
			i, state = end, afterValue
			continue

		case afterValue:
			if len(c.stack) == 0 {
				if i != len(src) {
					return dst, errInvalidJSON // trailing data
				}
				return dst, nil
			}
			var ok bool
			if dst, c.stack, i, state, ok = appendNext(dst, c.stack, src, i); !ok {
				return dst, errInvalidJSON
			}
		}
		c.mirror(dst[mark:])
	}
}

// mirror adds to the shape what dst gained: brackets, commas, keys.
func (c *compactor) mirror(b []byte) {
	if c.shapes {
		c.shape = append(c.shape, b...)
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
