package setup

import (
	"github.com/outboxrelay/outboxrelay/internal/connectschema"
	"github.com/outboxrelay/outboxrelay/registry"
	"github.com/outboxrelay/outboxrelay/registry/avro"
	"github.com/outboxrelay/outboxrelay/registry/jsonschema"
	"github.com/outboxrelay/outboxrelay/router"
)

// Formats maps each schema-registry converter class (key.converter,
// value.converter) to the format that compiles its schemas. Each Compile
// is a wrapper, not the package's function itself: a nil *avro.Codec with
// an error must not become a non-nil registry.Codec.
func Formats() map[string]registry.Format {
	return map[string]registry.Format{
		router.AvroConverterClass: {SchemaType: "AVRO", Compile: func(s *connectschema.Schema) (registry.Codec, error) {
			c, err := avro.Compile(s)
			if err != nil {
				return nil, err
			}
			return c, nil
		}},
		router.JSONSchemaConverterClass: {SchemaType: "JSON", Compile: func(s *connectschema.Schema) (registry.Codec, error) {
			c, err := jsonschema.Compile(s)
			if err != nil {
				return nil, err
			}
			return c, nil
		}},
	}
}
