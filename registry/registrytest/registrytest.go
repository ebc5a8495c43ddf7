// Package registrytest is for tests only: a schema-registry format whose
// registered schema names the Connect schema's type and whose body is the
// payload JSON itself, so that a test checks the converter stage (wire
// format, ids, registration, outages) without the Avro or JSON Schema
// formats and reads the body back without a decoder.
package registrytest

import (
	"github.com/outboxrelay/outboxrelay/internal/connectschema"
	"github.com/outboxrelay/outboxrelay/registry"
)

// Codec is the format's codec: Name is the Connect type.
type Codec struct{ Type string }

// Schema is {"connect":"<type>"}.
func (c Codec) Schema() string { return `{"connect":"` + c.Type + `"}` }

// Name is the Connect type, for RecordNameStrategy.
func (c Codec) Name() string { return c.Type }

// Append appends the payload unchanged.
func (c Codec) Append(dst, payload []byte) ([]byte, error) { return append(dst, payload...), nil }

// Formats maps each class to the format (schemaType JSON).
func Formats(classes ...string) map[string]registry.Format {
	m := map[string]registry.Format{}
	for _, c := range classes {
		m[c] = registry.Format{SchemaType: "JSON", Compile: func(s *connectschema.Schema) (registry.Codec, error) {
			return Codec{Type: string(s.Type)}, nil
		}}
	}
	return m
}
