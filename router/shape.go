package router

// The schema of an expanded payload depends on its shape only: the keys in
// order, the JSON type of each value (and a number's Connect type), the
// arrays' elements. Outbox payloads of one event type share a shape, so the
// router keeps the schemas it inferred by shape (shapeCache) and infers a
// payload only when its shape is new: the compactor writes the shape as it
// compacts the payload, in the same pass, without allocation.

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

// lookup returns the schema of a payload whose compacted JSON is compact
// and whose shape is shape (the compactor's), inferring and keeping it when
// the shape is new. An empty shape is none (the payload was not
// compacted): it is inferred without the cache.
func (c *shapeCache) lookup(shape, compact []byte, infer func([]byte) (*connectSchema, error)) (*connectSchema, error) {
	if len(shape) == 0 || len(shape) > maxShapeEntry {
		return infer(compact)
	}
	if e, hit := c.schemas[string(shape)]; hit {
		return e.schema, e.err
	}
	s, err := infer(compact)
	if s != nil {
		s.memo = appendSchema(nil, s, "")
	}
	size := shapeBytes(shape, s, err)
	if size > maxShapeEntry {
		return s, err
	}
	if c.schemas == nil || len(c.schemas) >= maxShapes || c.bytes+size > maxShapeBytes {
		c.schemas, c.bytes = make(map[string]inferred), 0
	}
	c.schemas[string(shape)] = inferred{s, err}
	c.bytes += size
	return s, err
}

// numberLetter is a JSON number literal's letter in a shape: its Connect
// type (numberType) as i (int32), l (int64) or d (double). An integer of
// at most 9 digits is an int32, one of 11 to 18 an int64 and one of 20 or
// more a double, whatever they are; only those of 10 or 19 are parsed.
func numberLetter(lit []byte) byte {
	digits := len(lit)
	for i, c := range lit {
		switch {
		case c == '.' || c == 'e' || c == 'E':
			return 'd'
		case c == '-' && i == 0:
			digits--
		}
	}
	switch {
	case digits <= 9:
		return 'i'
	case digits >= 11 && digits <= 18:
		return 'l'
	case digits >= 20: // past int64 (JSON has no leading zeros); parsing it allocated an error
		return 'd'
	}
	switch numberType(string(lit)) {
	case "int32":
		return 'i'
	case "int64":
		return 'l'
	}
	return 'd'
}
