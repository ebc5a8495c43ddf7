// Package avro converts the Kafka Connect schemas the router writes into the
// Avro schemas Confluent's AvroConverter registers (the rules of AvroData in
// confluentinc/schema-registry's avro-data module, with AvroConverter's
// default configuration), and encodes a JsonConverter payload into the Avro
// binary body of a record. It is pure: no I/O, no registry. The rules and the
// source of each are in docs of this package's files and in the tests'
// golden files (testdata/*.avsc).
package avro

import (
	"fmt"
	"sync"

	"github.com/outboxrelay/outboxrelay/internal/connectschema"
)

// Codec is one compiled schema: its Avro text and the encoder of its
// payloads. It is safe for concurrent use.
type Codec struct {
	root   *node
	text   string
	name   string
	states sync.Pool // *encoder
}

// Compile converts a Connect schema as the converter's Connect-to-format
// code does with the AvroConverter defaults (AvroData.fromConnectSchema).
func Compile(s *connectschema.Schema) (*Codec, error) {
	if s == nil {
		return nil, fmt.Errorf("compiling an Avro schema: no Connect schema")
	}
	c := newCompiler()
	root, err := c.convert(s, "")
	if err != nil {
		return nil, fmt.Errorf("compiling an Avro schema: %w", err)
	}
	codec := &Codec{root: root, text: schemaText(root)}
	if root.kind == tRecord {
		codec.name = root.fullName()
	}
	codec.states.New = func() any { return new(encoder) }
	return codec, nil
}

// Schema is the schema text registered with the registry: Avro's
// Schema.toString() of the converted schema (compact JSON, attributes in
// Avro's order), stable for one Connect schema.
func (c *Codec) Schema() string { return c.text }

// Name is the name RecordNameStrategy uses: the full name of a record
// schema, and "" for any other schema (a primitive, an array, a map, or the
// ["null", record] union of an optional struct), for which Confluent's
// AvroSchema.name() is null and RecordNameStrategy refuses the record
// ("the message value must only be a record schema").
func (c *Codec) Name() string { return c.name }

// Append appends the Avro binary body of payload, the JSON JsonConverter
// writes for this schema (int64 as a number, bytes as base64, null for an
// absent optional, keys the schema has no field for ignored).
func (c *Codec) Append(dst, payload []byte) ([]byte, error) {
	e := c.states.Get().(*encoder)
	e.reset(payload)
	out, err := e.document(dst, c.root)
	e.reset(nil)
	c.states.Put(e)
	if err != nil {
		return dst, fmt.Errorf("encoding Avro: %w", err)
	}
	return out, nil
}
