package avro

import "strings"

// kind is an Avro schema type.
type kind uint8

const (
	tNull kind = iota
	tBoolean
	tInt
	tLong
	tFloat
	tDouble
	tBytes
	tString
	tArray
	tMap
	tRecord
	tUnion
)

func (k kind) String() string {
	return [...]string{"null", "boolean", "int", "long", "float", "double", "bytes", "string", "array", "map", "record", "union"}[k]
}

// prop is one schema property; value is compact JSON.
type prop struct {
	key   string
	value []byte
}

// node is one Avro schema with what its encoder needs to read the
// JsonConverter payload of the Connect schema it came from.
type node struct {
	kind  kind
	props []prop

	// tInt: the Connect type's range (int8, int16, int32).
	min, max int64

	// tRecord
	name, space, doc string
	fields           []field
	index            map[string]int
	entry            bool // a MapEntry record: the payload is a [key, value] array

	items    *node   // tArray
	values   *node   // tMap
	branches []*node // tUnion: ["null", T] or [T, "null"]
	valueAt  int     // tUnion: the index of T

	// onNull is the body written for a JSON null or an absent field: the
	// Connect default, else the null branch of an optional schema; nil
	// when null is an error.
	onNull []byte
	// connect is the Connect default's JSON (JsonConverter's layout), nil
	// for none; def is the Avro default it converts to.
	connect []byte
	def     []byte
}

// field is one record field.
type field struct {
	name, doc string
	typ       *node
	def       []byte // the Avro default's JSON, nil for none
	props     []prop
}

func (n *node) fullName() string {
	if n.space == "" {
		return n.name
	}
	return n.space + "." + n.name
}

// splitName is AvroData.splitName: the namespace is what comes before the
// last dot.
func splitName(full string) (space, name string) {
	if i := strings.LastIndexByte(full, '.'); i >= 0 {
		return full[:i], full[i+1:]
	}
	return "", full
}
