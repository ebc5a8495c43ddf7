package avro

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// encoder writes the Avro binary encoding of one JSON payload, reading it
// once (a record whose keys come out of the schema's order keeps the spans
// of the early values and encodes them when their turn comes).
type encoder struct {
	src   []byte
	pos   int
	spans []span // pending out-of-order record fields, a stack
	str   []byte // scratch for unescaped strings
	stack []byte // skip's open containers
	err   error  // what ended more()'s loop early
}

type span struct{ start, end int }

func (e *encoder) reset(src []byte) {
	e.src, e.pos, e.spans, e.err = src, 0, e.spans[:0], nil
}

// document encodes the whole payload: one value, nothing after it.
func (e *encoder) document(dst []byte, n *node) ([]byte, error) {
	dst, err := e.value(dst, n)
	if err != nil {
		return dst, err
	}
	e.ws()
	if e.pos != len(e.src) {
		return dst, fmt.Errorf("data after the JSON value: %s", e.found(e.pos))
	}
	return dst, nil
}

// pathError names where in the payload a value did not fit.
type pathError struct {
	path string
	err  error
}

func (p *pathError) Error() string {
	if p.path == "" {
		return p.err.Error()
	}
	return strings.TrimPrefix(p.path, ".") + ": " + p.err.Error()
}

func (p *pathError) Unwrap() error { return p.err }

func within(err error, segment string) error {
	var p *pathError
	if errors.As(err, &p) {
		return &pathError{path: segment + p.path, err: p.err}
	}
	return &pathError{path: segment, err: err}
}

func (e *encoder) value(dst []byte, n *node) ([]byte, error) {
	e.ws()
	if e.pos >= len(e.src) {
		return dst, errors.New("the JSON ends where a value was expected")
	}
	if e.src[e.pos] == 'n' {
		if err := e.literal("null"); err != nil {
			return dst, err
		}
		if n.onNull == nil {
			return dst, fmt.Errorf("null for a required %s (the schema is not optional and has no default)", n.kind)
		}
		return append(dst, n.onNull...), nil
	}
	switch n.kind {
	case tUnion:
		dst = appendLong(dst, int64(n.valueAt))
		return e.value(dst, n.branches[n.valueAt])
	case tBoolean:
		return e.boolean(dst)
	case tInt, tLong:
		return e.integer(dst, n)
	case tFloat, tDouble:
		return e.float(dst, n.kind)
	case tString:
		return e.stringValue(dst)
	case tBytes:
		return e.bytesValue(dst)
	case tArray:
		return e.array(dst, n.items)
	case tMap:
		return e.mapValue(dst, n.values)
	case tRecord:
		if n.entry {
			return e.entry(dst, n)
		}
		return e.record(dst, n)
	}
	return dst, fmt.Errorf("a %s schema takes no value", n.kind)
}

func (e *encoder) boolean(dst []byte) ([]byte, error) {
	switch e.src[e.pos] {
	case 't':
		return append(dst, 1), e.literal("true")
	case 'f':
		return append(dst, 0), e.literal("false")
	}
	return dst, e.mismatch("a boolean")
}

func (e *encoder) integer(dst []byte, n *node) ([]byte, error) {
	start := e.pos
	lit, isInt, err := e.number()
	if err != nil {
		return dst, err
	}
	if !isInt {
		return dst, fmt.Errorf("%s is not an integer", e.found(start))
	}
	v, err := parseInt(lit)
	if err != nil || (n.kind == tInt && (v < n.min || v > n.max)) {
		return dst, fmt.Errorf("%s is out of range", e.found(start))
	}
	return appendLong(dst, v), nil
}

// float writes a float or double: a JSON number, or one of the strings
// JsonConverter (Jackson, QUOTE_NON_NUMERIC_NUMBERS) writes for a value
// that is not finite, "NaN", "Infinity" and "-Infinity" (a double
// precision or real column holding one), as its IEEE value.
func (e *encoder) float(dst []byte, k kind) ([]byte, error) {
	var f float64
	if e.src[e.pos] == '"' {
		start := e.pos
		s, err := e.str1()
		if err != nil {
			return dst, err
		}
		var ok bool
		if f, ok = nonFinite(s); !ok {
			return dst, fmt.Errorf("%s where a number was expected", e.found(start))
		}
	} else {
		lit, _, err := e.number()
		if err != nil {
			return dst, err
		}
		bits := 64
		if k == tFloat {
			bits = 32
		}
		var perr error
		if f, perr = parseFloat(lit, bits); perr != nil {
			return dst, fmt.Errorf("%s is not a %s", lit, k)
		}
	}
	switch {
	case k == tFloat && math.IsNaN(f):
		return binary.LittleEndian.AppendUint32(dst, javaFloatNaN), nil
	case k == tFloat:
		return binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(f))), nil
	case math.IsNaN(f):
		return binary.LittleEndian.AppendUint64(dst, javaDoubleNaN), nil
	}
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f)), nil
}

// Java's Float.NaN and Double.NaN, the bits Avro's BinaryEncoder writes
// (floatToRawIntBits, doubleToRawLongBits) for the NaN Double.parseDouble
// gives; Go's math.NaN() has other payload bits.
const (
	javaFloatNaN  = 0x7fc00000
	javaDoubleNaN = 0x7ff8000000000000
)

// nonFinite reads Java's text for a float that is not finite.
func nonFinite(s []byte) (float64, bool) {
	switch string(s) {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		return math.Inf(1), true
	case "-Infinity":
		return math.Inf(-1), true
	}
	return 0, false
}

func (e *encoder) stringValue(dst []byte) ([]byte, error) {
	s, err := e.str1()
	if err != nil {
		return dst, err
	}
	dst = appendLong(dst, int64(len(s)))
	return append(dst, s...), nil
}

// bytesValue: JsonConverter writes bytes (and a Decimal's unscaled
// two's-complement bytes) in base64.
func (e *encoder) bytesValue(dst []byte) ([]byte, error) {
	start := e.pos
	s, err := e.str1()
	if err != nil {
		return dst, err
	}
	size := base64.StdEncoding.DecodedLen(len(s))
	at := len(dst)
	dst = appendLong(dst, 0)
	head := len(dst)
	dst = append(dst, make([]byte, size)...)
	k, err := base64.StdEncoding.Decode(dst[head:], s)
	if err != nil {
		return dst[:at], fmt.Errorf("%s is not base64 (bytes): %v", e.found(start), err)
	}
	dst = dst[:head+k]
	return insertCount(dst, at, head, int64(k)), nil
}

// insertCount replaces the one-byte zero written at dst[at:head] by the
// varint of count, moving what follows.
func insertCount(dst []byte, at, head int, count int64) []byte {
	var tmp [binary.MaxVarintLen64]byte
	k := binary.PutVarint(tmp[:], count)
	if k == head-at {
		copy(dst[at:], tmp[:k])
		return dst
	}
	grow := k - (head - at)
	dst = append(dst, tmp[:grow]...)
	copy(dst[head+grow:], dst[head:len(dst)-grow])
	copy(dst[at:], tmp[:k])
	return dst
}

// array is one block of items and the end block (an empty array: the end
// block alone).
func (e *encoder) array(dst []byte, items *node) ([]byte, error) {
	if err := e.open('[', "an array"); err != nil {
		return dst, err
	}
	at := len(dst)
	dst = append(dst, 0)
	count := int64(0)
	for e.more(']', count) {
		if count > 0 {
			if err := e.expect(','); err != nil {
				return dst, err
			}
		}
		var err error
		if dst, err = e.value(dst, items); err != nil {
			return dst, within(err, fmt.Sprintf("[%d]", count))
		}
		count++
	}
	return e.closeBlock(dst, at, count)
}

func (e *encoder) mapValue(dst []byte, values *node) ([]byte, error) {
	if err := e.open('{', "an object (map)"); err != nil {
		return dst, err
	}
	at := len(dst)
	dst = append(dst, 0)
	count := int64(0)
	for e.more('}', count) {
		if count > 0 {
			if err := e.expect(','); err != nil {
				return dst, err
			}
		}
		keyAt := e.pos
		key, err := e.key()
		if err != nil {
			return dst, err
		}
		dst = appendLong(dst, int64(len(key)))
		dst = append(dst, key...)
		if dst, err = e.value(dst, values); err != nil {
			return dst, within(err, "{"+e.keyAt(keyAt)+"}")
		}
		count++
	}
	return e.closeBlock(dst, at, count)
}

// closeBlock ends an array or map whose items follow the zero at dst[at]:
// the zero becomes the block's count, and the end block follows (an empty
// one is the end block alone).
func (e *encoder) closeBlock(dst []byte, at int, count int64) ([]byte, error) {
	if e.err != nil {
		return dst, e.takeErr()
	}
	if count == 0 {
		return dst, nil
	}
	dst = insertCount(dst, at, at+1, count)
	return append(dst, 0), nil
}

// entry is one MapEntry record of a map with non-string keys, which
// JsonConverter writes as [key, value].
func (e *encoder) entry(dst []byte, n *node) ([]byte, error) {
	if err := e.open('[', "a [key, value] map entry"); err != nil {
		return dst, err
	}
	dst, err := e.value(dst, n.fields[0].typ)
	if err != nil {
		return dst, within(err, "{key}")
	}
	if err := e.expect(','); err != nil {
		return dst, err
	}
	if dst, err = e.value(dst, n.fields[1].typ); err != nil {
		return dst, within(err, "{value}")
	}
	e.ws()
	return dst, e.expect(']')
}

// record writes the fields in the schema's order; keys the schema has no
// field for are skipped, a missing key is a null (the field's default, or
// the null branch).
func (e *encoder) record(dst []byte, n *node) ([]byte, error) {
	e.ws()
	from, written := e.pos, len(dst)
	if e.pos >= len(e.src) || e.src[e.pos] != '{' {
		return dst, e.mismatch("an object (record " + n.fullName() + ")")
	}
	e.pos++
	next, base, count := 0, -1, int64(0)
	for e.more('}', count) {
		if count > 0 {
			if err := e.expect(','); err != nil {
				return dst, err
			}
		}
		count++
		key, err := e.key()
		if err != nil {
			return dst, err
		}
		i := n.lookup(key, next)
		switch {
		case i < 0:
			err = e.skip()
		case i < next || (base >= 0 && e.spans[base+i].end > 0):
			// A key twice: Jackson keeps the last value. Start again,
			// keeping every field's span.
			if base >= 0 {
				e.spans = e.spans[:base]
			}
			e.pos = from
			return e.recordBySpans(dst[:written], n)
		case i == next:
			e.ws()
			start := e.pos
			if dst, err = e.value(dst, n.fields[i].typ); err != nil {
				if !e.repeatedLater(start, n, i) {
					return dst, within(err, "."+n.fields[i].name)
				}
				// The key comes again and Jackson keeps the last value:
				// the one that did not fit does not count.
				if base >= 0 {
					e.spans = e.spans[:base]
				}
				e.pos, e.err = from, nil
				return e.recordBySpans(dst[:written], n)
			}
			next++
		default:
			if base < 0 {
				base = len(e.spans)
				e.spans = append(e.spans, make([]span, len(n.fields))...)
			}
			e.ws()
			start := e.pos
			err = e.skip()
			e.spans[base+i] = span{start, e.pos}
		}
		if err != nil {
			return dst, err
		}
	}
	if e.err != nil {
		return dst, e.takeErr()
	}
	dst, err := e.rest(dst, n, next, base)
	if base >= 0 {
		e.spans = e.spans[:base]
	}
	return dst, err
}

// repeatedLater says whether the key of field i comes again in the object
// after the value at start, which did not fit. Only then is the object
// written again by its spans: a value that fails deep down costs each
// enclosing record one scan of its rest, not a rewrite of the subtree
// (which, level by level, would grow with the square of the depth).
func (e *encoder) repeatedLater(start int, n *node, i int) bool {
	e.pos, e.err = start, nil
	if e.skip() != nil {
		return false
	}
	for {
		e.ws()
		if e.pos >= len(e.src) || e.src[e.pos] != ',' {
			return false
		}
		e.pos++
		key, err := e.key()
		if err != nil {
			return false
		}
		if n.lookup(key, i) == i {
			return true
		}
		if e.skip() != nil {
			return false
		}
	}
}

// recordBySpans reads the whole object keeping the span of each field's
// last value, then writes the fields (an object with a key twice).
func (e *encoder) recordBySpans(dst []byte, n *node) ([]byte, error) {
	if err := e.open('{', "an object"); err != nil {
		return dst, err
	}
	base := len(e.spans)
	e.spans = append(e.spans, make([]span, len(n.fields))...)
	for count := int64(0); e.more('}', count); count++ {
		if count > 0 {
			if err := e.expect(','); err != nil {
				return dst, err
			}
		}
		key, err := e.key()
		if err != nil {
			return dst, err
		}
		i := n.lookup(key, 0)
		e.ws()
		start := e.pos
		if err := e.skip(); err != nil {
			return dst, err
		}
		if i >= 0 {
			e.spans[base+i] = span{start, e.pos}
		}
	}
	if e.err != nil {
		return dst, e.takeErr()
	}
	dst, err := e.rest(dst, n, 0, base)
	e.spans = e.spans[:base]
	return dst, err
}

// rest writes the fields from next on: the kept spans, else the nulls.
func (e *encoder) rest(dst []byte, n *node, next, base int) ([]byte, error) {
	for i := next; i < len(n.fields); i++ {
		f := &n.fields[i]
		if base >= 0 && e.spans[base+i].end > 0 {
			saved := e.pos
			e.pos = e.spans[base+i].start
			var err error
			dst, err = e.value(dst, f.typ)
			e.pos = saved
			if err != nil {
				return dst, within(err, "."+f.name)
			}
			continue
		}
		if f.typ.onNull == nil {
			return dst, within(errors.New("missing (the field is not optional and has no default)"), "."+f.name)
		}
		dst = append(dst, f.typ.onNull...)
	}
	return dst, nil
}

// keyAt reads again the key at i (the scratch buffer holding it may have
// been reused), for an error.
func (e *encoder) keyAt(i int) string {
	again := encoder{src: e.src, pos: i}
	again.ws()
	k, _ := again.str1()
	return string(k)
}

func (n *node) lookup(key []byte, next int) int {
	if next < len(n.fields) && n.fields[next].name == string(key) {
		return next
	}
	if i, ok := n.index[string(key)]; ok {
		return i
	}
	return -1
}

// appendLong is Avro's long (and int): zigzag, then a varint.
func appendLong(dst []byte, v int64) []byte {
	return binary.AppendVarint(dst, v)
}

// found quotes the JSON at i for an error: up to 40 bytes of it.
func (e *encoder) found(i int) string {
	if i >= len(e.src) {
		return "the end of the JSON"
	}
	end := i + 1
	if c := e.src[i]; c == '{' || c == '[' {
		whole := encoder{src: e.src, pos: i}
		end = len(e.src)
		if whole.skip() == nil {
			end = whole.pos
		}
		end = min(end, i+40)
	}
	for end < len(e.src) && end-i < 40 && e.src[end] != ',' && e.src[end] != '}' && e.src[end] != ']' {
		end++
	}
	s := string(e.src[i:end])
	if end-i >= 40 {
		s += "…"
	}
	if !utf8.ValidString(s) {
		return fmt.Sprintf("%q", s)
	}
	return s
}

func (e *encoder) mismatch(want string) error {
	return fmt.Errorf("%s where %s was expected", e.found(e.pos), want)
}
