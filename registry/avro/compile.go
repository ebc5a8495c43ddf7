package avro

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"

	"github.com/outboxrelay/outboxrelay/internal/connectschema"
)

// The names and properties of AvroData (AvroData.java's constants).
const (
	namespace        = "io.confluent.connect.avro"
	defaultName      = "ConnectDefault"
	mapEntryName     = "MapEntry"
	unionName        = namespace + ".Union"
	recordDocParam   = namespace + ".record.doc"
	fieldDocParam    = namespace + ".field.doc."
	fieldDefaultFlag = namespace + ".field.default"
	fixedSizeParam   = "connect.fixed.size"
	precisionParam   = "connect.decimal.precision"
	defaultPrecision = 64

	decimalName   = "org.apache.kafka.connect.data.Decimal"
	dateName      = "org.apache.kafka.connect.data.Date"
	timeName      = "org.apache.kafka.connect.data.Time"
	timestampName = "org.apache.kafka.connect.data.Timestamp"
)

// compiler is one AvroData.fromConnectSchema call (its FromConnectContext).
type compiler struct {
	// defaultIndex numbers the unnamed records: ConnectDefault,
	// ConnectDefault2, ... (FromConnectContext.incrementAndGetNameIndex).
	defaultIndex int
	// converted holds the nodes of the non-optional schemas already
	// converted, by their identity (FromConnectContext.schemaMap): an
	// equal schema is the same Avro schema, a record written by name the
	// second time.
	converted map[string]*node
	// named maps a record's full name to the identity and path of its
	// definition.
	named map[string][2]string
	// seen is FromConnectContext.seenNamedTypes: the Connect names of the
	// field schemas met so far.
	seen map[string]bool
}

func newCompiler() *compiler {
	return &compiler{converted: map[string]*node{}, named: map[string][2]string{}, seen: map[string]bool{}}
}

// convert is AvroData.fromConnectSchema(schema, context, ignoreOptional=false).
func (c *compiler) convert(s *connectschema.Schema, path string) (*node, error) {
	if s.Name == unionName {
		return nil, fmt.Errorf("%sConfluent union structs (%s) are not supported", at(path), unionName)
	}
	if s.Type == connectschema.Struct && s.Optional {
		return c.optionalStruct(s, path)
	}
	key := identity(s)
	if !s.Optional {
		if n := c.converted[key]; n != nil {
			return n, nil
		}
	}
	base, err := c.base(s, path, key)
	if err != nil {
		return nil, err
	}
	if err := c.annotate(base, s, path); err != nil {
		return nil, err
	}
	if s.Default != nil {
		if base.connect, base.def, err = convertDefault(s, s.Default, path); err != nil {
			return nil, err
		}
		if base.onNull, err = encodeDefault(base, base.connect); err != nil {
			return nil, fmt.Errorf("%sthe default %s: %w", at(path), s.Default, err)
		}
		if !hasParam(s, fieldDefaultFlag) {
			base.props = insertProp(base.props, "connect.default", base.def)
		}
	}
	final := base
	if s.Optional {
		final = optional(base, s.Default != nil)
	} else {
		c.converted[key] = final
	}
	return final, nil
}

// optionalStruct is the STRUCT case of an optional schema: ["null", record]
// whatever the default, the connect.* properties on the record.
func (c *compiler) optionalStruct(s *connectschema.Schema, path string) (*node, error) {
	inner := *s
	inner.Optional = false
	rec, err := c.convert(&inner, path)
	if err != nil {
		return nil, err
	}
	u := &node{kind: tUnion, branches: []*node{{kind: tNull}, rec}, valueAt: 1}
	u.onNull = []byte{0} // branch 0: null
	if rec.onNull != nil {
		u.onNull = append([]byte{2}, rec.onNull...) // branch 1 and the default
	}
	return u, nil
}

// optional is AvroData.maybeMakeOptional: ["null", T], or [T, "null"] for a
// schema with a default.
func optional(t *node, hasDefault bool) *node {
	if hasDefault {
		u := &node{kind: tUnion, branches: []*node{t, {kind: tNull}}, valueAt: 0}
		u.onNull = append([]byte{0}, t.onNull...)
		return u
	}
	return &node{kind: tUnion, branches: []*node{{kind: tNull}, t}, valueAt: 1, onNull: []byte{0}}
}

// base is the switch of fromConnectSchema: the Avro type of s.
func (c *compiler) base(s *connectschema.Schema, path, key string) (*node, error) {
	switch s.Type {
	case connectschema.Int8:
		return &node{kind: tInt, min: -1 << 7, max: 1<<7 - 1}, nil
	case connectschema.Int16:
		return &node{kind: tInt, min: -1 << 15, max: 1<<15 - 1}, nil
	case connectschema.Int32:
		return &node{kind: tInt, min: -1 << 31, max: 1<<31 - 1}, nil
	case connectschema.Int64:
		return &node{kind: tLong}, nil
	case connectschema.Float:
		return &node{kind: tFloat}, nil
	case connectschema.Double:
		return &node{kind: tDouble}, nil
	case connectschema.Boolean:
		return &node{kind: tBoolean}, nil
	case connectschema.String:
		return &node{kind: tString}, nil
	case connectschema.Bytes:
		if hasParam(s, fixedSizeParam) && s.Name != "" {
			return nil, fmt.Errorf("%sfixed schemas (%s) are not supported", at(path), fixedSizeParam)
		}
		return c.bytes(s, path)
	case connectschema.Array:
		items, err := c.convert(s.Items, path+"[]")
		if err != nil {
			return nil, err
		}
		return &node{kind: tArray, items: items}, nil
	case connectschema.Map:
		return c.mapSchema(s, path, key)
	case connectschema.Struct:
		return c.record(s, path, key)
	}
	return nil, fmt.Errorf("%sunknown Connect type %q", at(path), s.Type)
}

// bytes is the BYTES case: a Decimal gets its scale and precision first.
func (c *compiler) bytes(s *connectschema.Schema, path string) (*node, error) {
	n := &node{kind: tBytes}
	if !strings.EqualFold(s.Name, decimalName) {
		return n, nil
	}
	scale, err := strconv.Atoi(param(s, "scale"))
	if err != nil {
		return nil, fmt.Errorf("%sDecimal without an integer scale parameter: %w", at(path), err)
	}
	precision := defaultPrecision
	if p, ok := lookupParam(s, precisionParam); ok {
		if precision, err = strconv.Atoi(p); err != nil || precision <= 0 {
			return nil, fmt.Errorf("%sDecimal with precision %q", at(path), p)
		}
	}
	n.props = append(n.props, intProp("scale", scale), intProp("precision", precision))
	return n, nil
}

// mapSchema is the MAP case: an Avro map for non-optional string keys,
// else an array of MapEntry records {key, value}.
func (c *compiler) mapSchema(s *connectschema.Schema, path, key string) (*node, error) {
	if s.Keys.Type == connectschema.String && !s.Keys.Optional {
		values, err := c.convert(s.Values, path+"{}")
		if err != nil {
			return nil, err
		}
		return &node{kind: tMap, values: values}, nil
	}
	rec := &node{kind: tRecord, entry: true, name: mapEntryName, space: namespace}
	if s.Name != "" {
		rec.space, rec.name = splitName(s.Name)
		rec.props = append(rec.props, stringProp("connect.internal.type", mapEntryName))
	}
	if err := c.define(rec, path, key); err != nil {
		return nil, err
	}
	for _, kv := range []struct {
		name string
		s    *connectschema.Schema
	}{{"key", s.Keys}, {"value", s.Values}} {
		f, err := c.field(kv.name, "", kv.s, path+"{"+kv.name+"}")
		if err != nil {
			return nil, err
		}
		rec.fields = append(rec.fields, f)
	}
	return &node{kind: tArray, items: rec}, nil
}

// record is the STRUCT case of a non-optional struct. It is named before
// its fields are converted, so an outer unnamed struct is ConnectDefault
// and the first one inside it ConnectDefault2.
func (c *compiler) record(s *connectschema.Schema, path, key string) (*node, error) {
	rec := &node{kind: tRecord, doc: param(s, recordDocParam), index: map[string]int{}}
	if s.Name != "" {
		rec.space, rec.name = splitName(s.Name)
	} else {
		c.defaultIndex++
		rec.space, rec.name = namespace, defaultName
		if c.defaultIndex > 1 {
			rec.name += strconv.Itoa(c.defaultIndex)
		}
	}
	if err := c.define(rec, path, key); err != nil {
		return nil, err
	}
	for _, sf := range s.Fields {
		f, err := c.field(sf.Name, param(s, fieldDocParam+sf.Name), sf.Schema, path+"."+sf.Name)
		if err != nil {
			return nil, err
		}
		rec.index[f.name] = len(rec.fields)
		rec.fields = append(rec.fields, f)
	}
	return rec, nil
}

// define checks a record's name (Avro's validateName) and that no other
// record has it (Avro would write the second as a reference to the first).
func (c *compiler) define(rec *node, path, key string) error {
	if err := validName(rec.name); err != nil {
		return fmt.Errorf("%sthe record name %q: %w", at(path), rec.fullName(), err)
	}
	full := rec.fullName()
	if prev, ok := c.named[full]; ok && prev[0] != key {
		return fmt.Errorf("%sthe record name %q is already defined differently at %q; Avro cannot define a name twice",
			at(path), full, where(prev[1]))
	}
	c.named[full] = [2]string{key, path}
	return nil
}

// field is AvroData.addAvroRecordField.
func (c *compiler) field(name, doc string, s *connectschema.Schema, path string) (field, error) {
	if err := validName(name); err != nil {
		return field{}, fmt.Errorf("%sthe field name %q: %w", at(path), name, err)
	}
	seenBefore := false
	if s.Name != "" {
		seenBefore = c.seen[s.Name]
		c.seen[s.Name] = true
	}
	t, err := c.convert(s, path)
	if err != nil {
		return field{}, err
	}
	f := field{name: name, doc: doc, typ: t}
	switch {
	case s.Default != nil:
		_, f.def, err = convertDefault(s, s.Default, path)
		if err != nil {
			return field{}, err
		}
	case s.Optional:
		f.def = []byte("null")
	}
	if f.def != nil && !validDefault(t, f.def) {
		f.def = nil // Avro refuses it; AvroData keeps the field without a default
	}
	if seenBefore && len(s.Parameters) > 0 && isNamed(t) {
		if p := parametersProp(s); p != nil {
			f.props = append(f.props, *p)
		}
	}
	return f, nil
}

func isNamed(n *node) bool {
	if n.kind == tUnion {
		for _, b := range n.branches {
			if b.kind == tRecord {
				return true
			}
		}
	}
	return n.kind == tRecord
}

// annotate adds the connect.* properties and logical types (connect.meta.data=true),
// in AvroData's order: connect.doc, connect.version, connect.parameters,
// (connect.default, added by convert), connect.name, connect.type,
// logicalType, then the parameters named avro*.
func (c *compiler) annotate(n *node, s *connectschema.Schema, path string) error {
	if s.Doc != "" {
		n.props = append(n.props, stringProp("connect.doc", s.Doc))
	}
	if s.Version != 0 {
		n.props = append(n.props, intProp("connect.version", s.Version))
	}
	if p := parametersProp(s); p != nil {
		n.props = append(n.props, *p)
	}
	if s.Name != "" {
		n.props = append(n.props, stringProp("connect.name", s.Name))
	}
	switch s.Type {
	case connectschema.Int8, connectschema.Int16:
		n.props = append(n.props, stringProp("connect.type", string(s.Type)))
	}
	if lt, want := logicalType(s.Name); lt != "" {
		if n.kind != want {
			return fmt.Errorf("%s%s on a %s schema: Avro's %s logical type needs %s", at(path), s.Name, s.Type, lt, want)
		}
		n.props = append(n.props, stringProp("logicalType", lt))
	}
	for _, p := range s.Parameters {
		if strings.HasPrefix(p.Key, "avro") {
			n.props = append(n.props, stringProp(p.Key, p.Value))
		}
	}
	return nil
}

// logicalType is the Avro logical type of a Connect logical name and the
// Avro type it goes on.
func logicalType(name string) (string, kind) {
	switch {
	case name == "":
	case strings.EqualFold(name, decimalName):
		return "decimal", tBytes
	case strings.EqualFold(name, dateName):
		return "date", tInt
	case strings.EqualFold(name, timeName):
		return "time-millis", tInt
	case strings.EqualFold(name, timestampName):
		return "timestamp-millis", tLong
	}
	return "", 0
}

// insertProp puts connect.default where AvroData adds it: after
// connect.parameters, before connect.name.
func insertProp(props []prop, key string, value []byte) []prop {
	i := 0
	for i < len(props) {
		switch props[i].key {
		case "scale", "precision", "connect.doc", "connect.version", "connect.parameters":
			i++
			continue
		}
		break
	}
	props = append(props, prop{})
	copy(props[i+1:], props[i:])
	props[i] = prop{key: key, value: value}
	return props
}

// parametersProp is connect.parameters: the parameters but the
// field-default flag, nil when none is left.
func parametersProp(s *connectschema.Schema) *prop {
	var b []byte
	for _, p := range s.Parameters {
		if p.Key == fieldDefaultFlag {
			continue
		}
		if b == nil {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		b = appendJSONString(b, p.Key)
		b = append(b, ':')
		b = appendJSONString(b, p.Value)
	}
	if b == nil {
		return nil
	}
	return &prop{key: "connect.parameters", value: append(b, '}')}
}

func stringProp(key, value string) prop {
	return prop{key: key, value: appendJSONString(nil, value)}
}

func intProp(key string, value int) prop {
	return prop{key: key, value: strconv.AppendInt(nil, int64(value), 10)}
}

func lookupParam(s *connectschema.Schema, key string) (string, bool) {
	for _, p := range s.Parameters {
		if p.Key == key {
			return p.Value, true
		}
	}
	return "", false
}

func param(s *connectschema.Schema, key string) string {
	v, _ := lookupParam(s, key)
	return v
}

func hasParam(s *connectschema.Schema, key string) bool {
	_, ok := lookupParam(s, key)
	return ok
}

// validName is Avro's NameValidator.UTF_VALIDATOR (Java's Character.isLetter
// and isLetterOrDigit on UTF-16 code units).
func validName(name string) error {
	if name == "" {
		return fmt.Errorf("empty name")
	}
	for i, u := range utf16.Encode([]rune(name)) {
		r := rune(u)
		ok := r == '_' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r))
		if !ok {
			if i == 0 {
				return fmt.Errorf("illegal initial character (Avro names are letters, digits and _; scrub.invalid.names is off)")
			}
			return fmt.Errorf("illegal character (Avro names are letters, digits and _; scrub.invalid.names is off)")
		}
	}
	return nil
}

// identity is a Connect schema's equality (ConnectSchema.equals), optional
// flag left out: the key of compiler.converted.
func identity(s *connectschema.Schema) string {
	var b strings.Builder
	writeIdentity(&b, s, false)
	return b.String()
}

func writeIdentity(b *strings.Builder, s *connectschema.Schema, withOptional bool) {
	fmt.Fprintf(b, "{%s %q %d %q %s", s.Type, s.Name, s.Version, s.Doc, s.Default)
	if withOptional {
		fmt.Fprintf(b, " %t", s.Optional)
	}
	for _, p := range s.Parameters {
		fmt.Fprintf(b, " %q=%q", p.Key, p.Value)
	}
	for _, f := range s.Fields {
		fmt.Fprintf(b, " %q:", f.Name)
		writeIdentity(b, f.Schema, true)
	}
	for _, sub := range []*connectschema.Schema{s.Items, s.Keys, s.Values} {
		if sub != nil {
			writeIdentity(b, sub, true)
		}
	}
	b.WriteByte('}')
}

func at(path string) string {
	if path == "" {
		return ""
	}
	return strings.TrimPrefix(path, ".") + ": "
}

func where(path string) string {
	if path == "" {
		return "the top"
	}
	return strings.TrimPrefix(path, ".")
}
