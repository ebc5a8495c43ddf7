// Package registry is the schema-registry converters' common part: the
// stage after the router that turns its JsonConverter records
// ({"schema":…,"payload":…}) into the Confluent wire format (magic byte 0,
// the 4-byte schema id, the body), as Confluent's AvroConverter and
// JsonSchemaConverter write them. It owns their configuration
// (key.converter.* / value.converter.*: ParseConfig), the Confluent Schema
// Registry REST client (Client: several URLs, basic or bearer auth, TLS),
// the subject name strategies (Strategy), and the Converter, which
// compiles each distinct Connect schema once with the format's Codec,
// registers or looks it up once per subject, and classifies failures for
// the relay (relay.Converter): a refused schema is a poison row, an
// unavailable registry is retried, refused credentials stop.
//
// The formats themselves (registry/avro, registry/jsonschema) are pure:
// a Format's Compile turns a Connect schema into a Codec; the wiring
// (internal/setup) maps each converter class to its Format.
package registry
