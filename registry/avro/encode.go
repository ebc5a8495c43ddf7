package avro

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/outboxrelay/outboxrelay/internal/connectschema"
)

// encoder writes the Avro binary encoding of one JSON payload, reading it
// once (a record whose keys come out of the schema's order keeps the spans
// of the early values and encodes them when their turn comes).
type encoder struct {
	src   []byte
	pos   int
	spans []span // pending out-of-order record fields, a stack
	ends  []int  // where the fields a record has written end, a stack
	str   []byte // scratch for unescaped strings
	stack []byte // skip's open containers
	err   error  // what ended more()'s loop early
}

type span struct{ start, end int }

func (e *encoder) reset(src []byte) {
	e.src, e.pos, e.spans, e.ends, e.err = src, 0, e.spans[:0], e.ends[:0], nil
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

func within(err error, segment string) error { return connectschema.Within(err, segment) }

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

// record writes the fields in the schema's order, reading the object once.
// Keys the schema has no field for are skipped; a missing key is a null
// (the field's default, or the null branch). Fields in the schema's order
// are written as they come; a value that comes early keeps its span and is
// written when its turn comes. A key given twice counts with its last
// value, as Jackson reads it: from then on every value keeps its span, and
// at the end the fields already written are kept (their bytes moved, not
// encoded again) but those whose key came again. Writing the object again
// from its start instead took time exponential in the depth of a payload
// repeating a key at every level (TestAppendRepeatedKeysLinear).
func (e *encoder) record(dst []byte, n *node) ([]byte, error) {
	e.ws()
	written := len(dst)
	if e.pos >= len(e.src) || e.src[e.pos] != '{' {
		return dst, e.mismatch("an object (record " + n.fullName() + ")")
	}
	e.pos++
	r := recordState{n: n, written: written, base: -1, mark: len(e.ends), failed: -1}
	dst, err := e.readFields(dst, &r)
	if err == nil {
		dst, err = e.writeRest(dst, &r)
	}
	if r.base >= 0 {
		e.spans = e.spans[:r.base]
	}
	e.ends = e.ends[:r.mark]
	return dst, err
}

// recordState is one record being written: the first next fields are in
// dst after written, field i ending at e.ends[mark+i]; the spans of the
// others (and of fields whose key came again) are at e.spans[base:].
type recordState struct {
	n          *node
	written    int
	next       int
	base, mark int
	byspans    bool // a key came twice: every value keeps its span
	failed     int  // the field whose value did not fit, or -1
	failedErr  error
}

func (e *encoder) readFields(dst []byte, r *recordState) ([]byte, error) {
	n := r.n
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
		i := n.lookup(key, r.next)
		switch {
		case i < 0:
			err = e.skip()
		case i == r.next && !r.byspans:
			e.ws()
			start := e.pos
			if r.base >= 0 {
				e.spans[r.base+i] = span{} // an earlier value of the key
			}
			var verr error
			if dst, verr = e.value(dst, n.fields[i].typ); verr == nil {
				e.ends = append(e.ends, len(dst))
				r.next++
				break
			}
			// It may yet come again: keep reading, by spans.
			dst = dst[:r.end(e, r.next)]
			r.failed, r.failedErr, r.byspans = i, verr, true
			e.pos, e.err = start, nil
			if e.skip() != nil {
				return dst, within(verr, "."+n.fields[i].name)
			}
			e.spanBase(r)
		default:
			if i < r.next {
				r.byspans = true
			}
			e.spanBase(r)
			e.ws()
			start := e.pos
			err = e.skip()
			e.spans[r.base+i] = span{start, e.pos}
		}
		if err != nil {
			return dst, err
		}
	}
	if e.err != nil {
		return dst, e.takeErr()
	}
	if r.failed >= 0 && e.spans[r.base+r.failed].end == 0 {
		return dst, within(r.failedErr, "."+n.fields[r.failed].name)
	}
	return dst, nil
}

// spanBase makes room for the record's field spans.
func (e *encoder) spanBase(r *recordState) {
	if r.base < 0 {
		r.base = len(e.spans)
		e.spans = append(e.spans, make([]span, len(r.n.fields))...)
	}
}

// end is where the bytes of the first i written fields end.
func (r *recordState) end(e *encoder, i int) int {
	if i == 0 {
		return r.written
	}
	return e.ends[r.mark+i-1]
}

// writeRest writes the fields not written yet. When the key of a field
// already written came again, the fields from the first such one on are
// written after dst's end (the others copied from their bytes) and moved
// into place.
func (e *encoder) writeRest(dst []byte, r *recordState) ([]byte, error) {
	n := r.n
	from := r.next
	if r.base >= 0 {
		for i := 0; i < r.next; i++ {
			if e.spans[r.base+i].end > 0 {
				from = i
				break
			}
		}
	}
	if from == r.next {
		return e.fieldsFrom(dst, n, from, len(n.fields), r.base)
	}
	keep, tail := r.end(e, from), len(dst)
	for i := from; i < len(n.fields); i++ {
		if i < r.next && e.spans[r.base+i].end == 0 {
			dst = append(dst, dst[r.end(e, i):r.end(e, i+1)]...)
			continue
		}
		var err error
		if dst, err = e.fieldsFrom(dst, n, i, i+1, r.base); err != nil {
			return dst, err
		}
	}
	return dst[:keep+copy(dst[keep:], dst[tail:])], nil
}

// fieldsFrom writes fields from to end-1 from their spans, else as nulls.
func (e *encoder) fieldsFrom(dst []byte, n *node, from, end, base int) ([]byte, error) {
	for i := from; i < end; i++ {
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
