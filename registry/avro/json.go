package avro

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The encoder's JSON reading: white space, literals, numbers, strings,
// skipping a value the schema has no field for.

// ws skips white space. Its first test is small enough to be inlined:
// the router's payloads are compacted, with no white space to skip.
func (e *encoder) ws() {
	if e.pos < len(e.src) && e.src[e.pos] > ' ' {
		return
	}
	e.skipSpace()
}

func (e *encoder) skipSpace() {
	for e.pos < len(e.src) {
		switch e.src[e.pos] {
		case ' ', '\t', '\n', '\r':
			e.pos++
		default:
			return
		}
	}
}

func (e *encoder) literal(word string) error {
	if !bytes.HasPrefix(e.src[e.pos:], []byte(word)) {
		return fmt.Errorf("%s is not JSON", e.found(e.pos))
	}
	e.pos += len(word)
	return nil
}

func (e *encoder) open(c byte, what string) error {
	e.ws()
	if e.pos >= len(e.src) || e.src[e.pos] != c {
		return e.mismatch(what)
	}
	e.pos++
	return nil
}

func (e *encoder) expect(c byte) error {
	e.ws()
	if e.pos >= len(e.src) || e.src[e.pos] != c {
		return fmt.Errorf("%s where %q was expected", e.found(e.pos), c)
	}
	e.pos++
	return nil
}

// more says whether another element follows in the array or object being
// read (count read so far), consuming the closing delimiter when not.
func (e *encoder) more(end byte, count int64) bool {
	e.ws()
	if e.pos >= len(e.src) {
		e.err = errors.New("the JSON ends inside an array or object")
		return false
	}
	if e.src[e.pos] == end {
		e.pos++
		return false
	}
	return true
}

func (e *encoder) takeErr() error {
	err := e.err
	e.err = nil
	return err
}

// number reads a JSON number, returning its literal and whether it is an
// integer literal (no fraction, no exponent).
func (e *encoder) number() (lit []byte, isInt bool, err error) {
	start, i := e.pos, e.pos
	src := e.src
	digits := func() int {
		n := 0
		for i < len(src) && src[i] >= '0' && src[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(src) && src[i] == '-' {
		i++
	}
	if n := digits(); n == 0 || (n > 1 && src[i-n] == '0') {
		return nil, false, e.mismatch("a number")
	}
	isInt = true
	if i < len(src) && src[i] == '.' {
		i++
		if digits() == 0 {
			return nil, false, e.mismatch("a number")
		}
		isInt = false
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if digits() == 0 {
			return nil, false, e.mismatch("a number")
		}
		isInt = false
	}
	e.pos = i
	return src[start:i], isInt, nil
}

// parseInt reads an integer literal as an int64.
func parseInt(lit []byte) (int64, error) {
	neg := len(lit) > 0 && lit[0] == '-'
	if neg {
		lit = lit[1:]
	}
	if len(lit) == 0 {
		return 0, errors.New("no digits")
	}
	var u uint64
	for _, c := range lit {
		if c < '0' || c > '9' {
			return 0, errors.New("not a digit")
		}
		if u > (1<<64-1)/10 {
			return 0, errors.New("out of range")
		}
		u = u*10 + uint64(c-'0')
		if u > 1<<63 {
			return 0, errors.New("out of range")
		}
	}
	if neg {
		return -int64(u), nil // -1<<63 wraps to itself
	}
	if u > 1<<63-1 {
		return 0, errors.New("out of range")
	}
	return int64(u), nil
}

// parseFloat reads a JSON number as Java's Double.parseDouble (and
// Float.parseFloat) does: one too large is an infinity.
func parseFloat(lit []byte, bits int) (float64, error) {
	f, err := strconv.ParseFloat(string(lit), bits)
	if errors.Is(err, strconv.ErrRange) {
		return f, nil
	}
	return f, err
}

// str1 reads a JSON string: its bytes alias the payload when it has no
// escapes, else the encoder's scratch buffer (valid until the next string).
func (e *encoder) str1() ([]byte, error) {
	if e.pos >= len(e.src) || e.src[e.pos] != '"' {
		return nil, e.mismatch("a string")
	}
	start := e.pos + 1
	ascii := true
	for i := start; i < len(e.src); i++ {
		c := e.src[i]
		switch {
		case c >= 0x80:
			ascii = false
		case c == '"':
			s := e.src[start:i]
			if !ascii && !utf8.Valid(s) {
				return nil, errors.New("a string that is not UTF-8")
			}
			e.pos = i + 1
			return s, nil
		case c == '\\':
			return e.unescape(start)
		case c < 0x20:
			return nil, fmt.Errorf("a control character in a string at byte %d", i)
		}
	}
	return nil, errors.New("the JSON ends inside a string")
}

// unescape reads the string starting at start (after the quote) into the
// scratch buffer.
func (e *encoder) unescape(start int) ([]byte, error) {
	out := e.str[:0]
	i := start
	for i < len(e.src) {
		c := e.src[i]
		switch {
		case c == '"':
			if !utf8.Valid(out) {
				return nil, errors.New("a string that is not UTF-8")
			}
			e.pos = i + 1
			e.str = out
			return out, nil
		case c < 0x20:
			return nil, fmt.Errorf("a control character in a string at byte %d", i)
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(e.src) {
			break
		}
		i++
		switch esc := e.src[i]; esc {
		case '"', '\\', '/':
			out = append(out, esc)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, next, err := e.unicodeEscape(i + 1)
			if err != nil {
				return nil, err
			}
			out = utf8.AppendRune(out, r)
			i = next
			continue
		default:
			return nil, fmt.Errorf("the escape \\%c in a string", esc)
		}
		i++
	}
	return nil, errors.New("the JSON ends inside a string")
}

// unicodeEscape reads the 4 hex digits at i (and a low surrogate's escape
// after a high one); a lone surrogate is U+FFFD, as Go's encoding/json has it.
func (e *encoder) unicodeEscape(i int) (rune, int, error) {
	r, ok := hex4(e.src, i)
	if !ok {
		return 0, 0, errors.New("a bad \\u escape in a string")
	}
	i += 4
	if utf16.IsSurrogate(r) {
		if len(e.src) >= i+6 && e.src[i] == '\\' && e.src[i+1] == 'u' {
			if r2, ok := hex4(e.src, i+2); ok {
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					return d, i + 6, nil
				}
			}
		}
		return utf8.RuneError, i, nil
	}
	return r, i, nil
}

func hex4(src []byte, i int) (rune, bool) {
	if i+4 > len(src) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(src[i:i+4]), 16, 32)
	return rune(v), err == nil
}

// key reads an object key and the colon after it.
func (e *encoder) key() ([]byte, error) {
	e.ws()
	k, err := e.str1()
	if err != nil {
		return nil, err
	}
	return k, e.expect(':')
}

// skip reads past one JSON value of any depth, checking it is JSON,
// without recursion.
func (e *encoder) skip() error {
	stack := e.stack[:0]
	defer func() { e.stack = stack[:0] }()
	for {
		e.ws()
		if e.pos >= len(e.src) {
			return errors.New("the JSON ends where a value was expected")
		}
		switch c := e.src[e.pos]; c {
		case '{', '[':
			e.pos++
			e.ws()
			if e.pos < len(e.src) && e.src[e.pos] == c+2 { // '}' and ']' are '{'+2 and '['+2
				e.pos++
				break
			}
			stack = append(stack, c+2)
			if c == '{' {
				if _, err := e.key(); err != nil {
					return err
				}
			}
			continue
		case '"':
			if _, err := e.str1(); err != nil {
				return err
			}
		case 't':
			if err := e.literal("true"); err != nil {
				return err
			}
		case 'f':
			if err := e.literal("false"); err != nil {
				return err
			}
		case 'n':
			if err := e.literal("null"); err != nil {
				return err
			}
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			if _, _, err := e.number(); err != nil {
				return err
			}
		default:
			return e.mismatch("a value")
		}
		// After a value: close the containers it ends, or go on after a comma.
		for len(stack) > 0 {
			e.ws()
			if e.pos >= len(e.src) {
				return errors.New("the JSON ends inside an array or object")
			}
			end := stack[len(stack)-1]
			c := e.src[e.pos]
			if c == end {
				e.pos++
				stack = stack[:len(stack)-1]
				continue
			}
			if c != ',' {
				return fmt.Errorf("%s where ',' or %q was expected", e.found(e.pos), end)
			}
			e.pos++
			if end == '}' {
				if _, err := e.key(); err != nil {
					return err
				}
			}
			break
		}
		if len(stack) == 0 {
			return nil
		}
	}
}
