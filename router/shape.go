package router

// The schema of an expanded payload depends on its shape only: the keys in
// order, the JSON type of each value (and a number's Connect type), the
// arrays' elements. Outbox payloads of one event type share a shape, so the
// router keeps the schemas it inferred by shape (shapeCache) and infers a
// payload only when its shape is new: building the shape is one scan of the
// compacted payload, without allocation.

// The cache is bounded by count and by bytes, an estimate of what each
// entry holds (shapeBytes); when the next entry would pass either bound it
// starts over. A shape whose entry alone would pass maxShapeEntry (a
// payload with thousands of keys) is inferred each time and not kept: its
// payload is as large, so inferring it again costs what reading it does.
const (
	maxShapes      = 1024
	maxShapeBytes  = 16 << 20
	maxShapeEntry  = 256 << 10
	shapeTreeRatio = 3 // a schema tree's heap against its JSON (memo): 1.5 MB for 0.54 MB at 10,000 int fields
)

// inferred is one cache entry: the schema or why there is none.
type inferred struct {
	schema *connectSchema
	err    error
}

// shapeCache maps a payload's shape to its inferred schema. It belongs to
// one Router (one goroutine).
type shapeCache struct {
	buf     []byte
	schemas map[string]inferred
	bytes   int // the entries' shapeBytes
}

// shapeBytes estimates what an entry keeps: its shape (the map key), the
// schema's memoized JSON and the schema tree (shapeTreeRatio times it).
func shapeBytes(shape []byte, s *connectSchema, err error) int {
	n := len(shape) + 64
	if s != nil {
		n += (1 + shapeTreeRatio) * len(s.memo)
	}
	if err != nil {
		n += len(err.Error())
	}
	return n
}

// lookup returns the schema of a payload with compact's shape, inferring
// and keeping it when the shape is new. compact is valid JSON (the router
// checked and compacted it); what the scan cannot read is inferred without
// the cache.
func (c *shapeCache) lookup(compact []byte, infer func([]byte) (*connectSchema, error)) (*connectSchema, error) {
	var ok bool
	c.buf, ok = appendShape(c.buf[:0], compact)
	if !ok || len(c.buf) > maxShapeEntry {
		return infer(compact)
	}
	if e, hit := c.schemas[string(c.buf)]; hit {
		return e.schema, e.err
	}
	s, err := infer(compact)
	if s != nil {
		s.memo = appendSchema(nil, s, "")
	}
	size := shapeBytes(c.buf, s, err)
	if size > maxShapeEntry {
		return s, err
	}
	if c.schemas == nil || len(c.schemas) >= maxShapes || c.bytes+size > maxShapeBytes {
		c.schemas, c.bytes = make(map[string]inferred), 0
	}
	c.schemas[string(c.buf)] = inferred{s, err}
	c.bytes += size
	return s, err
}

// appendShape appends the shape of the JSON in src: its structure and
// object keys (as written) with each string replaced by s, each number by
// its Connect type's letter (i int32, l int64, d double), true and false by
// b, null by n. It reports false when src is not what it can scan.
func appendShape(dst, src []byte) ([]byte, bool) {
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '{', '}', '[', ']', ',', ':':
			dst = append(dst, c)
		case ' ', '\t', '\n', '\r':
		case '"':
			end, ok := stringEnd(src, i)
			if !ok {
				return dst, false
			}
			if j := skipSpaceAt(src, end); j < len(src) && src[j] == ':' {
				dst = append(dst, src[i:end]...) // a key
			} else {
				dst = append(dst, 's')
			}
			i = end - 1
		case 't', 'f', 'n':
			n := 4
			if c == 'f' {
				n = 5
			}
			if i+n > len(src) {
				return dst, false
			}
			if c == 'n' {
				dst = append(dst, 'n')
			} else {
				dst = append(dst, 'b')
			}
			i += n - 1
		default:
			j := i
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '-' || src[j] == '+' || src[j] == '.' || src[j] == 'e' || src[j] == 'E') {
				j++
			}
			if j == i {
				return dst, false
			}
			switch numberType(string(src[i:j])) {
			case "int32":
				dst = append(dst, 'i')
			case "int64":
				dst = append(dst, 'l')
			default:
				dst = append(dst, 'd')
			}
			i = j - 1
		}
	}
	return dst, true
}

// stringEnd returns the index just past the string starting at src[i].
func stringEnd(src []byte, i int) (int, bool) {
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}

func skipSpaceAt(src []byte, j int) int {
	for j < len(src) && (src[j] == ' ' || src[j] == '\t' || src[j] == '\n' || src[j] == '\r') {
		j++
	}
	return j
}
