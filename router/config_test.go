package router

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseConfigFixture(t *testing.T) {
	cfg, warnings, err := ParseConfig(connectorConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings for the fixture config: %q", warnings)
	}
	want := Config{
		Alias: "outbox", EventIDField: "message_id", EventKeyField: "aggregate_id", EventTypeField: "type",
		PayloadField: "payload", AdditionalPlacement: "event_type:header:eventType", AdditionalMissing: "error",
		ExpandJSONPayload: true, JSONPayloadNullBehavior: "ignore", JSONPayloadEmptyArrayBehavior: "ignore", RouteByField: "aggregate_type",
		RouteTopicRegex: "(?<routedByValue>.*)", RouteTopicReplacement: "${routedByValue}", OpInvalidBehavior: "warn",
		TracingSpanContextField: "tracingspancontext", TracingOperationName: "debezium-read", KeyConverter: ConverterString, ValueConverter: ConverterJSON,
		DecimalHandlingMode: "string", TopicPrefix: "order_db",
		placements: []placement{{column: "event_type", kind: placeHeader, alias: "eventType"}},
	}
	if got := cfg; !equalConfig(got, want) {
		t.Errorf("config =\n%+v\nwant\n%+v", got, want)
	}
}

func equalConfig(a, b Config) bool {
	return reflect.DeepEqual(a, b)
}

func TestConfigDefaults(t *testing.T) {
	var c Config
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	checks := map[string][2]string{
		"table.field.event.id":             {c.EventIDField, "id"},
		"table.field.event.key":            {c.EventKeyField, "aggregateid"},
		"table.field.event.type":           {c.EventTypeField, "type"},
		"table.field.event.payload":        {c.PayloadField, "payload"},
		"table.field.event.timestamp":      {c.TimestampField, ""},
		"table.field.additional.missing":   {c.AdditionalMissing, "error"},
		"table.json.payload.null.behavior": {c.JSONPayloadNullBehavior, "ignore"},
		"route.by.field":                   {c.RouteByField, "aggregatetype"},
		"route.topic.regex":                {c.RouteTopicRegex, "(?<routedByValue>.*)"},
		"route.topic.replacement":          {c.RouteTopicReplacement, "outbox.event.${routedByValue}"},
		"table.op.invalid.behavior":        {c.OpInvalidBehavior, "warn"},
		"tracing.span.context.field":       {c.TracingSpanContextField, "tracingspancontext"},
		"tracing.operation.name":           {c.TracingOperationName, "debezium-read"},
	}
	for key, v := range checks {
		if v[0] != v[1] {
			t.Errorf("default %s = %q, want %q", key, v[0], v[1])
		}
	}
	if c.ExpandJSONPayload || c.RouteTombstoneOnEmptyPayload || c.ExtendedHeaders {
		t.Error("boolean options must default to false")
	}
	if c.KeyConverter != ConverterString || c.ValueConverter != ConverterJSON {
		t.Errorf("converters = %v / %v, want StringConverter / JsonConverter without schemas", c.KeyConverter, c.ValueConverter)
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name      string
		overrides map[string]string
		key       string // the key the error must name
		fix       string // part of what to write instead
	}{
		{"no transforms", map[string]string{"transforms": "-"}, "transforms", "transforms.outbox.type=" + EventRouterClass},
		{"other transform in chain", map[string]string{"transforms": "unwrap,outbox", "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState"}, "transforms.unwrap.type", "remove \"unwrap\""},
		{"alias without type", map[string]string{"transforms": "outbox,x"}, "transforms.x.type", "set it to"},
		{"two event routers", map[string]string{"transforms": "outbox,again", "transforms.again.type": EventRouterClass}, "transforms", "keep one"},
		{"bad regex", map[string]string{"transforms.outbox.route.topic.regex": "(unclosed"}, "transforms.outbox.route.topic.regex", "Go RE2"},
		{"lookbehind", map[string]string{"transforms.outbox.route.topic.regex": "(?<=x)y"}, "transforms.outbox.route.topic.regex", "lookbehind"},
		{"java class intersection", map[string]string{"transforms.outbox.route.topic.regex": "[a-z&&[^b]]"}, "transforms.outbox.route.topic.regex", "intersection"},
		{"unknown named group in replacement", map[string]string{"transforms.outbox.route.topic.replacement": "${nope}"}, "transforms.outbox.route.topic.replacement", "(?<nope>"},
		{"group number too big", map[string]string{"transforms.outbox.route.topic.replacement": "$2"}, "transforms.outbox.route.topic.replacement", "has 1"},
		{"lone dollar", map[string]string{"transforms.outbox.route.topic.replacement": "a$"}, "transforms.outbox.route.topic.replacement", `\$`},
		{"lone backslash", map[string]string{"transforms.outbox.route.topic.replacement": `a\`}, "transforms.outbox.route.topic.replacement", `\\`},
		{"unknown placement", map[string]string{"transforms.outbox.table.fields.additional.placement": "event_type:body"}, "transforms.outbox.table.fields.additional.placement", "header, envelope or partition"},
		{"placement without kind", map[string]string{"transforms.outbox.table.fields.additional.placement": "event_type"}, "transforms.outbox.table.fields.additional.placement", "column:placement[:alias]"},
		{"placement empty alias", map[string]string{"transforms.outbox.table.fields.additional.placement": "event_type:header:"}, "transforms.outbox.table.fields.additional.placement", "drop the last"},
		{"envelope alias payload", map[string]string{"transforms.outbox.table.fields.additional.placement": "event_type:envelope:payload"}, "transforms.outbox.table.fields.additional.placement", "another alias"},
		{"bad missing", map[string]string{"transforms.outbox.table.field.additional.missing": "skip"}, "transforms.outbox.table.field.additional.missing", "error, ignore"},
		{"bad old missing", map[string]string{"transforms.outbox.table.fields.additional.error.on.missing": "yes"}, "transforms.outbox.table.fields.additional.error.on.missing", "true or false"},
		{"bad op behavior", map[string]string{"transforms.outbox.table.op.invalid.behavior": "skip"}, "transforms.outbox.table.op.invalid.behavior", "warn, error, fatal"},
		{"bad null behavior", map[string]string{"transforms.outbox.table.json.payload.null.behavior": "keep"}, "transforms.outbox.table.json.payload.null.behavior", "ignore, optional_bytes"},
		{"bad empty array behavior", map[string]string{"transforms.outbox.table.json.payload.empty.array.behavior": "keep"}, "transforms.outbox.table.json.payload.empty.array.behavior", "ignore, optional_string"},
		{"bad boolean", map[string]string{"transforms.outbox.table.expand.json.payload": "yes"}, "transforms.outbox.table.expand.json.payload", "true or false"},
		{"protobuf converter", map[string]string{"value.converter": ProtobufConverterClass}, "value.converter", "no Protobuf"},
		{"protobuf key converter", map[string]string{"key.converter": ProtobufConverterClass}, "key.converter", AvroConverterClass},
		{"avro converter with messages", map[string]string{"transforms": "decode,outbox", "transforms.decode.type": DecodeMessageClass, "value.converter": AvroConverterClass}, "value.converter", "does not infer Connect schemas"},
		{"json header converter", map[string]string{"header.converter": JSONConverterClass}, "header.converter", SimpleHeaderConverterClass},
		{"predicate", map[string]string{"transforms.outbox.predicate": "isOutbox"}, "transforms.outbox.predicate", "publication"},
		{"extended headers without prefix", map[string]string{"extended.headers.enabled": "true", "topic.prefix": "-"}, "topic.prefix", "logical name"},
		{"bad decimal mode", map[string]string{"decimal.handling.mode": "exact"}, "decimal.handling.mode", "precise, double, string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseConfig(withOverrides(connectorConfig(t), tt.overrides))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error = %v, want a *ConfigError", err)
			}
			if !strings.Contains(ce.Key, tt.key) {
				t.Errorf("error names key %q, want %q (%v)", ce.Key, tt.key, err)
			}
			if !strings.Contains(err.Error(), tt.fix) {
				t.Errorf("error %q does not say %q", err, tt.fix)
			}
		})
	}
}

func TestParseConfigWarnings(t *testing.T) {
	_, warnings, err := ParseConfig(withOverrides(connectorConfig(t), map[string]string{
		"transforms.outbox.debezium.op.invalid.behavior":     "warn",
		"transforms.outbox.table.field.event.payload.id":     "x",
		"transforms.outbox.no.such.option":                   "1",
		"transforms.unlisted.type":                           "x",
		"transforms.outbox.table.field.event.schema.version": "v",
		"key.converter.schemas.enable":                       "true",
		"database.hostname":                                  "db.example", // another component's key: no warning
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"transforms.outbox.debezium.op.invalid.behavior: removed",
		"transforms.outbox.no.such.option: unknown EventRouter option",
		"transforms.outbox.table.field.event.payload.id: removed",
		"transforms.outbox.table.field.event.schema.version: not supported",
		"transforms.unlisted.type: ignored",
		"key.converter.schemas.enable is ignored",
	}
	if len(warnings) != len(want) {
		t.Fatalf("warnings = %q, want %d", warnings, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(warnings[i], w) {
			t.Errorf("warning %d = %q, want it to start with %q", i, warnings[i], w)
		}
	}
}

func TestParseConfigOptions(t *testing.T) {
	tests := []struct {
		name      string
		overrides map[string]string
		check     func(Config) bool
	}{
		{"old missing key true", map[string]string{"transforms.outbox.table.fields.additional.error.on.missing": "true"}, func(c Config) bool { return c.AdditionalMissing == "error" }},
		{"old missing key false", map[string]string{"transforms.outbox.table.fields.additional.error.on.missing": "false"}, func(c Config) bool { return c.AdditionalMissing == "ignore" }},
		{"new missing key wins", map[string]string{"transforms.outbox.table.fields.additional.error.on.missing": "false", "transforms.outbox.table.field.additional.missing": "ERROR"}, func(c Config) bool { return c.AdditionalMissing == "error" }},
		{"placement parts trimmed, kind case-insensitive", map[string]string{"transforms.outbox.table.fields.additional.placement": " a : Header , b:ENVELOPE:bee ,c:partition:x,"},
			func(c Config) bool {
				return len(c.placements) == 3 && c.placements[0] == placement{"a", placeHeader, "a"} &&
					c.placements[1] == placement{"b", placeEnvelope, "bee"} && c.placements[2].kind == placePartition
			}},
		{"json converter defaults to schemas", map[string]string{"key.converter": JSONConverterClass, "value.converter": JSONConverterClass}, func(c Config) bool {
			return c.KeyConverter == ConverterJSONWithSchema && c.ValueConverter == ConverterJSONWithSchema
		}},
		{"json converter schemas off", map[string]string{"value.converter": JSONConverterClass, "value.converter.schemas.enable": "False"}, func(c Config) bool { return c.ValueConverter == ConverterJSON }},
		{"string converters", map[string]string{"key.converter": StringConverterClass, "value.converter": StringConverterClass}, func(c Config) bool {
			return c.KeyConverter == ConverterString && c.ValueConverter == ConverterString
		}},
		{"value schemas without converter", map[string]string{"value.converter.schemas.enable": "true"}, func(c Config) bool { return c.ValueConverter == ConverterJSONWithSchema }},
		{"avro converters write JsonConverter schemas", map[string]string{"key.converter": AvroConverterClass, "value.converter": AvroConverterClass}, func(c Config) bool {
			return c.KeyConverter == ConverterJSONWithSchema && c.ValueConverter == ConverterJSONWithSchema && c.KeyRegistry == AvroConverterClass && c.ValueRegistry == AvroConverterClass
		}},
		{"json schema converter ignores schemas.enable", map[string]string{"value.converter": JSONSchemaConverterClass, "value.converter.schemas.enable": "false"}, func(c Config) bool {
			return c.ValueConverter == ConverterJSONWithSchema && c.ValueRegistry == JSONSchemaConverterClass && c.KeyRegistry == ""
		}},
		{"simple header converter accepted", map[string]string{"header.converter": SimpleHeaderConverterClass}, func(c Config) bool { return true }},
		{"tombstone and extended headers", map[string]string{"transforms.outbox.route.tombstone.on.empty.payload": " TRUE ", "extended.headers.enabled": "true"}, func(c Config) bool {
			return c.RouteTombstoneOnEmptyPayload && c.ExtendedHeaders
		}},
		{"op behavior case-insensitive", map[string]string{"transforms.outbox.table.op.invalid.behavior": "FATAL"}, func(c Config) bool { return c.OpInvalidBehavior == "fatal" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, err := ParseConfig(withOverrides(connectorConfig(t), tt.overrides))
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(cfg) {
				t.Errorf("unexpected config %+v", cfg)
			}
		})
	}
}

func TestParseConfigTracing(t *testing.T) {
	for _, tc := range []struct {
		only    string // tracing.with.context.field.only; "" unset
		without bool
	}{{"", false}, {"true", false}, {"false", true}, {" FALSE ", true}} {
		over := map[string]string{"transforms.outbox.tracing.operation.name": "outbox-publish"}
		if tc.only != "" {
			over["transforms.outbox.tracing.with.context.field.only"] = tc.only
		}
		c, warnings, err := ParseConfig(withOverrides(connectorConfig(t), over))
		if err != nil {
			t.Fatal(err)
		}
		if len(warnings) != 0 {
			t.Errorf("only=%q: warnings %q", tc.only, warnings)
		}
		if c.TracingOperationName != "outbox-publish" || c.TraceEventsWithoutContext != tc.without {
			t.Errorf("only=%q: operation %q, without context %v; want outbox-publish, %v", tc.only, c.TracingOperationName, c.TraceEventsWithoutContext, tc.without)
		}
	}
	_, _, err := ParseConfig(withOverrides(connectorConfig(t), map[string]string{"transforms.outbox.tracing.with.context.field.only": "yes"}))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != "transforms.outbox.tracing.with.context.field.only" {
		t.Errorf("only=yes: %v, want a ConfigError naming the key", err)
	}
}
