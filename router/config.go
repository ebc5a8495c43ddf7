package router

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/outboxrelay/outboxrelay/internal/confkey"
)

// EventRouterClass is the transforms.<alias>.type value of Debezium's outbox
// EventRouter, the transformation outboxrelay runs.
const EventRouterClass = "io.debezium.transforms.outbox.EventRouter"

// DecodeMessageClass is the transforms.<alias>.type value of Debezium's
// transformation that turns a logical decoding message's JSON content into
// an insert-shaped record; chained before the EventRouter, it makes
// pg_logical_emit_message an outbox without a table (RouteMessage).
const DecodeMessageClass = "io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent"

// optFieldsNullInclude is the decode transformation's one option.
const optFieldsNullInclude = "fields.null.include"

// Converter class names accepted in key.converter and value.converter.
const (
	StringConverterClass       = "org.apache.kafka.connect.storage.StringConverter"
	JSONConverterClass         = "org.apache.kafka.connect.json.JsonConverter"
	SimpleHeaderConverterClass = "org.apache.kafka.connect.storage.SimpleHeaderConverter"
	// The schema-registry converters: the router writes their records as
	// JsonConverter with schemas.enable=true ({"schema":…,"payload":…}),
	// which package registry turns into the registry's wire format.
	AvroConverterClass       = "io.confluent.connect.avro.AvroConverter"
	JSONSchemaConverterClass = "io.confluent.connect.json.JsonSchemaConverter"
	// ProtobufConverterClass is refused (no Protobuf schemas yet).
	ProtobufConverterClass = "io.confluent.connect.protobuf.ProtobufConverter"
)

// Converter is how a record key or value is serialized, as Kafka Connect's
// converter of the same name would.
type Converter int

const (
	// ConverterDefault picks outboxrelay's default: StringConverter for keys
	// and JsonConverter without schemas for values, which is what the outbox
	// examples consume.
	ConverterDefault Converter = iota
	// ConverterString is StringConverter: the value's text in UTF-8.
	ConverterString
	// ConverterJSON is JsonConverter with schemas.enable=false.
	ConverterJSON
	// ConverterJSONWithSchema is JsonConverter with schemas.enable=true
	// (Connect's own default for JsonConverter): {"schema":…,"payload":…}.
	ConverterJSONWithSchema
)

func (c Converter) String() string {
	switch c {
	case ConverterString:
		return "StringConverter"
	case ConverterJSON:
		return "JsonConverter (schemas.enable=false)"
	case ConverterJSONWithSchema:
		return "JsonConverter (schemas.enable=true)"
	}
	return "default"
}

// Option names under transforms.<alias>., as Debezium spells them.
const (
	optType               = "type"
	optEventID            = "table.field.event.id"
	optEventKey           = "table.field.event.key"
	optEventType          = "table.field.event.type"
	optPayload            = "table.field.event.payload"
	optTimestamp          = "table.field.event.timestamp"
	optPlacement          = "table.fields.additional.placement"
	optMissing            = "table.field.additional.missing"
	optMissingOld         = "table.fields.additional.error.on.missing"
	optExpand             = "table.expand.json.payload"
	optNullBehavior       = "table.json.payload.null.behavior"
	optEmptyArrayBehavior = "table.json.payload.empty.array.behavior"
	optRouteBy            = "route.by.field"
	optRouteRegex         = "route.topic.regex"
	optRouteReplacement   = "route.topic.replacement"
	optTombstone          = "route.tombstone.on.empty.payload"
	optOpInvalid          = "table.op.invalid.behavior"
	optTracingField       = "tracing.span.context.field"
	optTracingOperation   = "tracing.operation.name"
	optTracingContextOnly = "tracing.with.context.field.only"
	optSchemaVersion      = "table.field.event.schema.version"
)

// Config is the EventRouter configuration plus the converter and connector
// keys that shape the records. Build it with ParseConfig from the connector
// JSON, or fill it directly; the zero value of every field means the
// default that Validate fills in.
type Config struct {
	// Alias is the transform's alias in `transforms`; it only names keys in
	// messages (transforms.<Alias>.route.by.field).
	Alias string

	EventIDField   string // table.field.event.id, default "id"
	EventKeyField  string // table.field.event.key, default "aggregateid"
	EventTypeField string // table.field.event.type, default "type"; unused, as in Debezium 3.x
	PayloadField   string // table.field.event.payload, default "payload"
	// TimestampField is table.field.event.timestamp: a timestamp,
	// timestamptz or bigint epoch-ms column for the record timestamp. Empty
	// means the transaction's commit time.
	TimestampField string
	// AdditionalPlacement is table.fields.additional.placement in Debezium's
	// syntax: "col:header|envelope|partition[:alias]", comma separated.
	AdditionalPlacement string
	// AdditionalMissing is table.field.additional.missing: "error" (default)
	// or "ignore" a placement column that the row lacks.
	AdditionalMissing string
	// ExpandJSONPayload is table.expand.json.payload (default false).
	ExpandJSONPayload bool
	// JSONPayloadNullBehavior is table.json.payload.null.behavior: "ignore"
	// (default) or "optional_bytes". Expansion keeps JSON nulls either way;
	// the value only changes the inferred schema, as in Debezium.
	JSONPayloadNullBehavior string
	// JSONPayloadEmptyArrayBehavior is Debezium 3.7's
	// table.json.payload.empty.array.behavior: "ignore" (default) or
	// "optional_string". Expansion keeps empty arrays either way; the
	// value only changes the inferred schema: an empty array is left out
	// of it, or gets an optional array of optional strings, as in Debezium.
	JSONPayloadEmptyArrayBehavior string
	RouteByField                  string // route.by.field, default "aggregatetype"
	// RouteTopicRegex is route.topic.regex in Java syntax, matched against
	// the whole route value; default "(?<routedByValue>.*)".
	RouteTopicRegex string
	// RouteTopicReplacement is route.topic.replacement in Java syntax;
	// default "outbox.event.${routedByValue}".
	RouteTopicReplacement string
	// RouteTombstoneOnEmptyPayload is route.tombstone.on.empty.payload.
	RouteTombstoneOnEmptyPayload bool
	// OpInvalidBehavior is table.op.invalid.behavior for updates: "warn"
	// (default), "error" or "fatal".
	OpInvalidBehavior string
	// TracingSpanContextField is tracing.span.context.field, default
	// "tracingspancontext": an optional column with a serialized span
	// context, forwarded as W3C traceparent/tracestate headers.
	TracingSpanContextField string
	// TracingOperationName is tracing.operation.name, default
	// "debezium-read": the name of the relay's publish span of an event
	// (package relay, Tracing), as Debezium names its processing span.
	TracingOperationName string
	// TraceEventsWithoutContext is tracing.with.context.field.only=false:
	// an event whose row holds no span context still gets the relay's
	// spans, as the root of a trace of its own. The EventRouter's default
	// (the key unset) traces only events with a context.
	TraceEventsWithoutContext bool

	KeyConverter   Converter // key.converter (+ key.converter.schemas.enable)
	ValueConverter Converter // value.converter (+ value.converter.schemas.enable)
	// KeyRegistry and ValueRegistry name the schema-registry converter
	// class (AvroConverterClass, JSONSchemaConverterClass) of key.converter
	// and value.converter, "" for none; the converter is then
	// ConverterJSONWithSchema, and package registry converts its records.
	KeyRegistry   string
	ValueRegistry string
	// DecimalHandlingMode is the connector's decimal.handling.mode; it only
	// decides how a numeric column is written inside JSON ("string": a JSON
	// string, "double": a JSON number, "precise": see docs/configuration.md, decimal.handling.mode).
	DecimalHandlingMode string
	// ExtendedHeaders is extended.headers.enabled; outboxrelay's default is
	// false (Debezium 3.2.1+ defaults to true).
	ExtendedHeaders bool
	// TopicPrefix is topic.prefix, the connector's logical name.
	TopicPrefix string
	// RunID is the __debezium.context.runId header value; New makes a random
	// UUID when it is empty, as each Debezium start does.
	RunID string

	// Messages: transforms chains DecodeMessageClass (alias MessagesAlias)
	// before the EventRouter, so logical decoding messages are routed.
	Messages      bool
	MessagesAlias string
	// FieldsNullInclude is transforms.<MessagesAlias>.fields.null.include
	// (default false): JSON nulls of a message's content become fields
	// with a null value instead of being left out.
	FieldsNullInclude bool

	placements []placement // AdditionalPlacement parsed by Validate
}

// Placement kinds of table.fields.additional.placement.
type placementKind int

const (
	placeHeader placementKind = iota
	placeEnvelope
	placePartition
)

type placement struct {
	column string
	kind   placementKind
	alias  string
}

// key returns the connector JSON key of an EventRouter option.
func (c *Config) key(opt string) string {
	alias := c.Alias
	if alias == "" {
		alias = "<alias>"
	}
	return "transforms." + alias + "." + opt
}

// Validate fills in defaults and checks every option, so that a bad
// configuration fails at start-up rather than on the first row. Each error
// is a *ConfigError naming the key and what to write instead.
func (c *Config) Validate() error {
	decls := confkey.Keys()
	c.applyDefaults(decls)
	if c.KeyConverter == ConverterDefault {
		c.KeyConverter = ConverterString
	}
	if c.ValueConverter == ConverterDefault {
		c.ValueConverter = ConverterJSON
	}
	c.TimestampField = strings.TrimSpace(c.TimestampField)

	for _, o := range c.declaredOptions() {
		if d, _ := confkey.Declared(decls, o.key); len(d.Values) > 0 {
			if err := c.oneOf(decls, o.key, o.field); err != nil {
				return err
			}
		}
	}
	if _, err := compileTopicRegex(c.RouteTopicRegex, c.RouteTopicReplacement); err != nil {
		// Both keys are named: the replacement is checked against the
		// regex's groups.
		return &ConfigError{Key: c.key(optRouteRegex) + " / " + c.key(optRouteReplacement), Reason: err.Error()}
	}
	var err error
	if c.placements, err = parsePlacements(c.AdditionalPlacement, c.key(optPlacement)); err != nil {
		return err
	}
	// The envelope is a struct: a second field called "payload", or two
	// fields with one alias, would make Kafka Connect's SchemaBuilder throw
	// on the first row. Fail at start-up instead.
	seen := map[string]bool{"payload": true}
	for _, p := range c.placements {
		if p.kind != placeEnvelope {
			continue
		}
		if seen[p.alias] {
			return &ConfigError{Key: c.key(optPlacement), Reason: fmt.Sprintf("envelope field %q appears twice (\"payload\" is taken by the payload); give it another alias: %s:envelope:<alias>", p.alias, p.column)}
		}
		seen[p.alias] = true
	}
	if err := c.validateMessages(); err != nil {
		return err
	}
	// The context headers carry the logical name; without it they would
	// be empty, which Debezium cannot produce (topic.prefix is required).
	if c.ExtendedHeaders && strings.TrimSpace(c.TopicPrefix) == "" {
		return &ConfigError{Key: "topic.prefix", Reason: "required when extended.headers.enabled=true (it is the __debezium.context.connectorLogicalName header); set it to the connector's logical name"}
	}
	return nil
}

// applyDefaults sets every empty option to its declared default
// (internal/confkey), for a Config parsed or filled in code alike.
func (c *Config) applyDefaults(decls []confkey.KeyDoc) {
	for _, o := range c.declaredOptions() {
		*o.field = strings.TrimSpace(*o.field)
		if *o.field == "" {
			decl, _ := confkey.Declared(decls, o.key)
			*o.field = decl.Default
		}
	}
}

// option is a string field of Config and the declared name of its key.
type option struct {
	field *string
	key   string
}

// declaredOptions lists the string fields that have a declared default.
func (c *Config) declaredOptions() []option {
	return []option{
		{&c.EventIDField, aliasKey(optEventID)},
		{&c.EventKeyField, aliasKey(optEventKey)},
		{&c.EventTypeField, aliasKey(optEventType)},
		{&c.PayloadField, aliasKey(optPayload)},
		{&c.AdditionalMissing, aliasKey(optMissing)},
		{&c.JSONPayloadNullBehavior, aliasKey(optNullBehavior)},
		{&c.JSONPayloadEmptyArrayBehavior, aliasKey(optEmptyArrayBehavior)},
		{&c.RouteByField, aliasKey(optRouteBy)},
		{&c.RouteTopicRegex, aliasKey(optRouteRegex)},
		{&c.RouteTopicReplacement, aliasKey(optRouteReplacement)},
		{&c.OpInvalidBehavior, aliasKey(optOpInvalid)},
		{&c.TracingSpanContextField, aliasKey(optTracingField)},
		{&c.TracingOperationName, aliasKey(optTracingOperation)},
		{&c.DecimalHandlingMode, "decimal.handling.mode"},
	}
}

// validateMessages refuses, when messages are routed, what outboxrelay
// cannot do with them as Debezium does.
func (c *Config) validateMessages() error {
	if !c.Messages {
		return nil
	}
	if c.TimestampField != "" {
		// Debezium reads it with getInt64 and a logical timestamp schema,
		// which a decoded JSON value never has: every message fails.
		return &ConfigError{Key: c.key(optTimestamp), Reason: fmt.Sprintf("cannot be used with %s: a message's JSON content has no timestamp type, and Debezium fails every message with it; remove it (the record timestamp is then the commit time)", DecodeMessageClass)}
	}
	for _, kv := range []struct {
		key      string
		conv     Converter
		registry string
	}{{"key.converter", c.KeyConverter, c.KeyRegistry}, {"value.converter", c.ValueConverter, c.ValueRegistry}} {
		if kv.registry != "" {
			return &ConfigError{Key: kv.key, Reason: fmt.Sprintf("%s is not supported with %s (outboxrelay does not infer Connect schemas for messages); use %s with %s.schemas.enable=false", kv.registry, DecodeMessageClass, JSONConverterClass, kv.key)}
		}
		if kv.conv == ConverterJSONWithSchema {
			return &ConfigError{Key: kv.key + ".schemas.enable", Reason: fmt.Sprintf("JsonConverter schemas are not supported with %s (outboxrelay does not infer Connect schemas for messages); set %s.schemas.enable=false", DecodeMessageClass, kv.key)}
		}
	}
	return nil
}

// aliasKey is the declared name of an EventRouter option
// (internal/confkey): transforms.<alias>.<opt>.
func aliasKey(opt string) string { return "transforms.<alias>." + opt }

// oneOf checks *field against the declared values of key, which Debezium
// matches case-insensitively, and sets it to the declared spelling.
func (c *Config) oneOf(decls []confkey.KeyDoc, key string, field *string) error {
	decl, _ := confkey.Declared(decls, key)
	v, ok := decl.Match(*field)
	if !ok {
		return &ConfigError{Key: strings.Replace(key, "transforms.<alias>.", c.key(""), 1), Reason: fmt.Sprintf("%q is not a valid value; write one of %s", *field, strings.Join(decl.Values, ", "))}
	}
	*field = v
	return nil
}

// parsePlacements parses "col:placement[:alias]" entries. Debezium only
// finds an unknown placement when the first row arrives; it is a start-up
// error here.
func parsePlacements(s, key string) ([]placement, error) {
	var out []placement
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		parts := strings.Split(entry, ":")
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		if len(parts) < 2 || len(parts) > 3 || parts[0] == "" {
			return nil, &ConfigError{Key: key, Reason: fmt.Sprintf("entry %q is not column:placement[:alias]; write for example event_type:header:eventType", entry)}
		}
		p := placement{column: parts[0], alias: parts[0]}
		switch strings.ToLower(parts[1]) {
		case "header":
			p.kind = placeHeader
		case "envelope":
			p.kind = placeEnvelope
		case "partition":
			p.kind = placePartition
		default:
			return nil, &ConfigError{Key: key, Reason: fmt.Sprintf("entry %q has the unknown placement %q; write header, envelope or partition", entry, parts[1])}
		}
		if len(parts) == 3 {
			if parts[2] == "" {
				return nil, &ConfigError{Key: key, Reason: fmt.Sprintf("entry %q has an empty alias; drop the last ':' to use the column name", entry)}
			}
			p.alias = parts[2]
		}
		out = append(out, p)
	}
	return out, nil
}

// ParseConfig reads the router's part of a Kafka Connect connector
// configuration (the "config" object, every value as a string) and
// validates it. Keys of other components (database.*, slot.name, …) are
// left alone; a transforms.* key the router does not know gives a warning,
// as do keys Debezium accepts but outboxrelay ignores.
func ParseConfig(m map[string]string) (Config, []string, error) {
	var cfg Config
	var warnings []string
	decode, alias, err := findChain(m)
	if err != nil {
		return cfg, nil, err
	}
	cfg.Alias = alias
	prefix := "transforms." + alias + "."
	if decode != "" {
		cfg.Messages, cfg.MessagesAlias = true, decode
		if err := parseDecodeOptions(&cfg, m); err != nil {
			return cfg, nil, err
		}
	}

	names := make([]string, 0, len(m))
	for k := range m {
		if strings.HasPrefix(k, "transforms.") {
			names = append(names, k)
		}
	}
	sort.Strings(names) // deterministic warnings

	keys := confkey.Read(m).Alias(alias) // the EventRouter's declared keys
	var newMissing, oldMissing string
	for _, k := range names {
		v := m[k]
		opt, ours := strings.CutPrefix(k, prefix)
		if decode != "" && strings.HasPrefix(k, "transforms."+decode+".") {
			continue // parseDecodeOptions read it
		}
		if !ours {
			if !isListedAlias(m["transforms"], k) {
				warnings = append(warnings, fmt.Sprintf("%s: ignored, its alias is not listed in transforms", k))
			}
			continue
		}
		target := cfg.stringOption(opt)
		switch {
		case target != nil:
			*target = v
		case opt == optType:
		case opt == optExpand:
			err = readBool(keys, aliasKey(optExpand), &cfg.ExpandJSONPayload)
		case opt == optTombstone:
			err = readBool(keys, aliasKey(optTombstone), &cfg.RouteTombstoneOnEmptyPayload)
		case opt == optMissing:
			newMissing = v
		case opt == optMissingOld:
			oldMissing = v
		case opt == "predicate" || opt == "negate":
			// Ignoring a predicate would route rows the user meant to skip.
			return cfg, nil, &ConfigError{Key: k, Reason: "predicates are not supported; filter rows in the publication or remove the predicate"}
		case opt == "debezium.op.invalid.behavior" || opt == "table.field.event.payload.id":
			warnings = append(warnings, fmt.Sprintf("%s: removed from Debezium, ignored", k))
		case opt == optTracingContextOnly:
			var only bool
			err = readBool(keys, aliasKey(optTracingContextOnly), &only)
			cfg.TraceEventsWithoutContext = !only
		case opt == optSchemaVersion:
			warnings = append(warnings, fmt.Sprintf("%s: not supported, ignored; JsonConverter schemas carry no version", k))
		default:
			warnings = append(warnings, fmt.Sprintf("%s: unknown EventRouter option, ignored", k))
		}
		if err != nil {
			return cfg, nil, err
		}
	}
	if cfg.AdditionalMissing, err = resolveMissing(&cfg, newMissing, oldMissing, &warnings); err != nil {
		return cfg, nil, err
	}
	if err := parseConnectorKeys(&cfg, m, &warnings); err != nil {
		return cfg, nil, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, nil, err
	}
	return cfg, warnings, nil
}

// parseConnectorKeys reads the converter and connector keys that shape
// the records.
func parseConnectorKeys(cfg *Config, m map[string]string, warnings *[]string) error {
	if err := parseConverters(cfg, m, warnings); err != nil {
		return err
	}
	if err := readBool(confkey.Read(m), "extended.headers.enabled", &cfg.ExtendedHeaders); err != nil {
		return err
	}
	cfg.TopicPrefix = m["topic.prefix"]
	cfg.DecimalHandlingMode = m["decimal.handling.mode"]
	if mode := strings.ToLower(strings.TrimSpace(m["binary.handling.mode"])); cfg.Messages && mode != "" && mode != "bytes" {
		// The connector would put the content in a string field, which
		// Debezium's decoder refuses ("non-binary") for every message.
		return &ConfigError{Key: "binary.handling.mode", Reason: fmt.Sprintf("%q makes Debezium's %s fail on every message; remove it or set it to bytes", mode, DecodeMessageClass)}
	}
	return nil
}

// stringOption returns the Config field that holds a string option, or nil.
func (c *Config) stringOption(opt string) *string {
	switch opt {
	case optEventID:
		return &c.EventIDField
	case optEventKey:
		return &c.EventKeyField
	case optEventType:
		return &c.EventTypeField
	case optPayload:
		return &c.PayloadField
	case optTimestamp:
		return &c.TimestampField
	case optPlacement:
		return &c.AdditionalPlacement
	case optNullBehavior:
		return &c.JSONPayloadNullBehavior
	case optEmptyArrayBehavior:
		return &c.JSONPayloadEmptyArrayBehavior
	case optRouteBy:
		return &c.RouteByField
	case optRouteRegex:
		return &c.RouteTopicRegex
	case optRouteReplacement:
		return &c.RouteTopicReplacement
	case optOpInvalid:
		return &c.OpInvalidBehavior
	case optTracingField:
		return &c.TracingSpanContextField
	case optTracingOperation:
		return &c.TracingOperationName
	}
	return nil
}

// findChain returns the alias of the one EventRouter in transforms and,
// when DecodeLogicalDecodingMessageContent comes before it, that
// transformation's alias. Any other transformation, or another order, is
// an error: running the chain without it would publish something other
// than what Kafka Connect would.
func findChain(m map[string]string) (decode, router string, err error) {
	for _, alias := range strings.Split(m["transforms"], ",") {
		alias = strings.TrimSpace(alias)
		if alias == "" {
			continue
		}
		typ := strings.TrimSpace(m["transforms."+alias+".type"])
		switch {
		case typ == EventRouterClass && router == "":
			router = alias
		case typ == EventRouterClass:
			return "", "", &ConfigError{Key: "transforms", Reason: fmt.Sprintf("both %q and %q are EventRouters; keep one", router, alias)}
		case typ == DecodeMessageClass && router != "":
			// After the EventRouter it would see only the messages the
			// router passed on unrouted, and publish them to <topic.prefix>.message.
			return "", "", &ConfigError{Key: "transforms", Reason: fmt.Sprintf("%q (%s) comes after the EventRouter %q; list it first: transforms=%s,%s", alias, DecodeMessageClass, router, alias, router)}
		case typ == DecodeMessageClass && decode != "":
			return "", "", &ConfigError{Key: "transforms", Reason: fmt.Sprintf("both %q and %q are %s; keep one", decode, alias, DecodeMessageClass)}
		case typ == DecodeMessageClass:
			decode = alias
		case typ == "":
			return "", "", &ConfigError{Key: "transforms." + alias + ".type", Reason: "missing; set it to " + EventRouterClass}
		default:
			return "", "", &ConfigError{Key: "transforms." + alias + ".type", Reason: fmt.Sprintf("%s is not supported: outboxrelay runs only %s, optionally after %s; remove %q from transforms", typ, EventRouterClass, DecodeMessageClass, alias)}
		}
	}
	if router == "" {
		return "", "", &ConfigError{Key: "transforms", Reason: "no EventRouter configured; set transforms=outbox and transforms.outbox.type=" + EventRouterClass}
	}
	return decode, router, nil
}

// parseDecodeOptions reads the options of the decode transformation. It
// has one (fields.null.include); any other key under its alias is an
// error, because outboxrelay could not honour it.
func parseDecodeOptions(c *Config, m map[string]string) error {
	prefix := "transforms." + c.MessagesAlias + "."
	for k := range m {
		opt, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		switch opt {
		case optType:
		case optFieldsNullInclude:
			if err := readBool(confkey.Read(m).Alias(c.MessagesAlias), aliasKey(optFieldsNullInclude), &c.FieldsNullInclude); err != nil {
				return err
			}
		case "predicate", "negate":
			return &ConfigError{Key: k, Reason: "predicates are not supported; filter messages with message.prefix.include.list or remove the predicate"}
		default:
			return &ConfigError{Key: k, Reason: fmt.Sprintf("unknown option of %s (it has only %s); remove it", DecodeMessageClass, optFieldsNullInclude)}
		}
	}
	return nil
}

// isListedAlias reports whether key belongs to an alias listed in
// transforms (that is, to a transform findChain has checked).
func isListedAlias(transforms, key string) bool {
	for _, alias := range strings.Split(transforms, ",") {
		if a := strings.TrimSpace(alias); a != "" && strings.HasPrefix(key, "transforms."+a+".") {
			return true
		}
	}
	return false
}

// resolveMissing merges table.field.additional.missing with the key it
// replaced, table.fields.additional.error.on.missing (true/false).
func resolveMissing(c *Config, newValue, oldValue string, warnings *[]string) (string, error) {
	if oldValue == "" {
		return newValue, nil
	}
	var errorOnMissing bool
	if err := parseBool(c.key(optMissingOld), oldValue, &errorOnMissing); err != nil {
		return "", err
	}
	if newValue != "" {
		*warnings = append(*warnings, fmt.Sprintf("%s is ignored because %s is set", c.key(optMissingOld), c.key(optMissing)))
		return newValue, nil
	}
	if errorOnMissing {
		return "error", nil
	}
	return "ignore", nil
}

func parseConverters(c *Config, m map[string]string, warnings *[]string) error {
	var err error
	if c.KeyConverter, c.KeyRegistry, err = parseConverter(m, "key.converter", warnings); err != nil {
		return err
	}
	if c.ValueConverter, c.ValueRegistry, err = parseConverter(m, "value.converter", warnings); err != nil {
		return err
	}
	if hc := strings.TrimSpace(m["header.converter"]); hc != "" && hc != SimpleHeaderConverterClass {
		return &ConfigError{Key: "header.converter", Reason: fmt.Sprintf("%s is not supported; remove the key or set it to %s", hc, SimpleHeaderConverterClass)}
	}
	return nil
}

// parseConverter reads key.converter or value.converter with its
// schemas.enable. JsonConverter's schemas.enable defaults to true, as in
// Kafka Connect; with no converter at all outboxrelay's defaults apply
// (see ConverterDefault), and an explicit schemas.enable still counts for a
// value, whose default converter is JsonConverter. A schema-registry
// converter is returned as registry, its records written as
// ConverterJSONWithSchema.
func parseConverter(m map[string]string, key string, warnings *[]string) (conv Converter, registry string, _ error) {
	class := strings.TrimSpace(m[key])
	schemasKey := key + ".schemas.enable"
	schemasText, schemasSet := m[schemasKey]
	schemas := true
	if schemasSet {
		if err := parseBool(schemasKey, schemasText, &schemas); err != nil {
			return 0, "", err
		}
	}
	switch class {
	case "":
		if !schemasSet {
			return ConverterDefault, "", nil
		}
		if key == "key.converter" {
			*warnings = append(*warnings, schemasKey+" is ignored: key.converter defaults to "+StringConverterClass)
			return ConverterDefault, "", nil
		}
		if schemas {
			return ConverterJSONWithSchema, "", nil
		}
		return ConverterJSON, "", nil
	case StringConverterClass:
		if schemasSet {
			*warnings = append(*warnings, schemasKey+" is ignored: StringConverter has no schemas")
		}
		return ConverterString, "", nil
	case JSONConverterClass:
		if schemas {
			return ConverterJSONWithSchema, "", nil
		}
		return ConverterJSON, "", nil
	case AvroConverterClass, JSONSchemaConverterClass:
		if schemasSet {
			*warnings = append(*warnings, schemasKey+" is ignored: "+class+" always writes its schema to the registry")
		}
		return ConverterJSONWithSchema, class, nil
	case ProtobufConverterClass:
		return 0, "", &ConfigError{Key: key, Reason: fmt.Sprintf("%s is not supported (no Protobuf schemas yet); write %s or %s", class, AvroConverterClass, JSONSchemaConverterClass)}
	}
	return 0, "", &ConfigError{Key: key, Reason: fmt.Sprintf("%s is not supported; write %s, %s, %s or %s", class, StringConverterClass, JSONConverterClass, AvroConverterClass, JSONSchemaConverterClass)}
}

// readBool reads a boolean key through its declaration (internal/confkey):
// the declared default when unset.
func readBool(keys confkey.Values, name string, dst *bool) error {
	b, err := keys.Bool(name)
	var ce *confkey.Error
	switch {
	case errors.As(err, &ce):
		return &ConfigError{Key: ce.Key, Reason: fmt.Sprintf("%q %s", ce.Value, ce.Reason)}
	case err != nil:
		return &ConfigError{Key: name, Reason: err.Error()}
	}
	*dst = b
	return nil
}

// parseBool parses a boolean the way Kafka's ConfigDef does
// (confkey.ParseBool): "true" or "false", any case, surrounding spaces
// ignored.
func parseBool(key, v string, dst *bool) error {
	b, err := confkey.ParseBool(v)
	if err != nil {
		return &ConfigError{Key: key, Reason: fmt.Sprintf("%q is not a boolean; write true or false", v)}
	}
	*dst = b
	return nil
}

// Placement is one parsed entry of table.fields.additional.placement.
type Placement struct {
	Column string
	Kind   string // header, envelope or partition
	Alias  string
}

// Placements returns table.fields.additional.placement as Validate parsed
// it (ParseConfig validates), so that check reads the entries the router
// routes by.
func (c Config) Placements() []Placement {
	names := [...]string{placeHeader: "header", placeEnvelope: "envelope", placePartition: "partition"}
	out := make([]Placement, len(c.placements))
	for i, p := range c.placements {
		out[i] = Placement{Column: p.column, Kind: names[p.kind], Alias: p.alias}
	}
	return out
}
