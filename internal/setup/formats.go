package setup

import "github.com/outboxrelay/outboxrelay/registry"

// Formats maps each schema-registry converter class (key.converter,
// value.converter) to the format that compiles its schemas.
//
// MERGE POINT (issue 28): this branch (i28-reg) builds none, so
// AvroConverter and JsonSchemaConverter are refused at start ("not built
// into this binary"). At merge the lead adds the two formats:
//
//	router.AvroConverterClass:       {SchemaType: "AVRO", Compile: func(s *connectschema.Schema) (registry.Codec, error) { return avro.Compile(s) }},
//	router.JSONSchemaConverterClass: {SchemaType: "JSON", Compile: func(s *connectschema.Schema) (registry.Codec, error) { return jsonschema.Compile(s) }},
//
// (a wrapper, not the function itself: Compile returns *avro.Codec, and
// a nil *Codec with an error must not become a non-nil registry.Codec).
func Formats() map[string]registry.Format {
	return map[string]registry.Format{}
}
