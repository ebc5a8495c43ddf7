package outbox

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/outboxrelay/outboxrelay/internal/config"
	"github.com/outboxrelay/outboxrelay/internal/msgprefix"
	"github.com/outboxrelay/outboxrelay/router"
)

// Options names the outbox table and the columns a Writer fills. Every
// column option has the name and the default of the EventRouter option
// that reads it, so a table written with the zero Options is relayed by a
// connector JSON that sets none of them. Read them from the relay's own
// connector JSON with LoadOptions or ParseOptions, and producer and relay
// cannot disagree.
type Options struct {
	// Table is the outbox table, "schema.table" or "table" (schema
	// public). Default "public.outbox". From the connector JSON it is the
	// one entry of table.include.list.
	Table string
	// IDColumn is table.field.event.id, default "id": the event id, which
	// the relay sends in the "id" header.
	IDColumn string
	// KeyColumn is table.field.event.key, default "aggregateid": the
	// Kafka record key.
	KeyColumn string
	// RouteColumn is route.by.field, default "aggregatetype": the value
	// route.topic.regex and route.topic.replacement turn into the topic.
	RouteColumn string
	// PayloadColumn is table.field.event.payload, default "payload": the
	// record value.
	PayloadColumn string
	// TopicRegex and TopicReplacement are route.topic.regex (default
	// "(?<routedByValue>.*)") and route.topic.replacement (default
	// "outbox.event.${routedByValue}") in Java syntax. The Writer uses
	// them only to refuse a route value that would give an illegal topic
	// name, which would stop the relay at the row.
	TopicRegex       string
	TopicReplacement string
	// SpanContextColumn is tracing.span.context.field, default
	// "tracingspancontext": when the table has this column and the write's
	// context holds a span (OpenTelemetry's trace.SpanContextFromContext),
	// Write fills it with the span's context, which the relay continues
	// (docs/tracing.md). A table without the column is written without.
	SpanContextColumn string
	// SpanContextFormat is how the column holds the context:
	// SpanContextProperties (the default: Java properties text, which
	// Debezium's tracing reads too) or SpanContextW3C (the bare
	// traceparent, without tracestate).
	SpanContextFormat SpanContextFormat

	// Alias is the EventRouter's alias in transforms, for error messages;
	// "outbox" when empty.
	Alias string

	// MessagePrefix is the prefix an Emitter writes its messages with
	// (DefaultMessagePrefix when empty). From the connector JSON it is
	// message.prefix.include.list's entry, when that is one literal prefix.
	MessagePrefix string
	// MessagePrefixIncludeList and MessagePrefixExcludeList are the
	// relay's message.prefix.include.list and message.prefix.exclude.list
	// (copied from the connector JSON by LoadOptions and ParseOptions).
	// NewEmitter refuses a MessagePrefix they would make the relay skip,
	// so no emitted event is silently dropped.
	MessagePrefixIncludeList, MessagePrefixExcludeList string
}

// routerConfig is the part of the EventRouter configuration the Writer
// shares with the relay.
func (o *Options) routerConfig() router.Config {
	alias := o.Alias
	if alias == "" {
		alias = "outbox"
	}
	return router.Config{
		Alias:                   alias,
		EventIDField:            o.IDColumn,
		EventKeyField:           o.KeyColumn,
		PayloadField:            o.PayloadColumn,
		RouteByField:            o.RouteColumn,
		RouteTopicRegex:         o.TopicRegex,
		RouteTopicReplacement:   o.TopicReplacement,
		TracingSpanContextField: o.SpanContextColumn,
	}
}

// Validate fills in the defaults, which are the router's own (so a change
// there cannot leave the producer behind), and checks the names.
func (o *Options) Validate() error {
	cfg := o.routerConfig()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("outbox options: %w", err)
	}
	o.Alias = cfg.Alias
	o.IDColumn, o.KeyColumn, o.PayloadColumn = cfg.EventIDField, cfg.EventKeyField, cfg.PayloadField
	o.RouteColumn, o.TopicRegex, o.TopicReplacement = cfg.RouteByField, cfg.RouteTopicRegex, cfg.RouteTopicReplacement
	o.SpanContextColumn = cfg.TracingSpanContextField
	if o.SpanContextFormat != SpanContextProperties && o.SpanContextFormat != SpanContextW3C {
		return fmt.Errorf("outbox options: SpanContextFormat %d is neither SpanContextProperties nor SpanContextW3C", o.SpanContextFormat)
	}
	o.Table = strings.TrimSpace(o.Table)
	if o.Table == "" {
		o.Table = "public.outbox"
	}
	if !strings.Contains(o.Table, ".") {
		o.Table = "public." + o.Table
	}
	if strings.Count(o.Table, ".") != 1 || strings.HasPrefix(o.Table, ".") || strings.HasSuffix(o.Table, ".") {
		return fmt.Errorf("outbox options: Table %q is not schema.table; write for example public.outbox", o.Table)
	}
	// Each distinct role needs its own column: one column cannot be both
	// the id and the payload.
	seen := map[string]string{}
	for _, c := range []struct{ name, opt string }{
		{o.IDColumn, "table.field.event.id"}, {o.KeyColumn, "table.field.event.key"},
		{o.RouteColumn, "route.by.field"}, {o.PayloadColumn, "table.field.event.payload"},
	} {
		if other, dup := seen[c.name]; dup {
			return fmt.Errorf("outbox options: column %q is named by both %s and %s; give each its own column", c.name, other, c.opt)
		}
		seen[c.name] = c.opt
	}
	return nil
}

// LoadOptions reads the connector JSON file the relay runs with (see
// ParseOptions). Config providers (${env:NAME}, ${file:…}) are resolved
// from this process's environment, as the relay does.
func LoadOptions(path string) (Options, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Options{}, fmt.Errorf("outbox: reading connector config: %w", err)
	}
	return ParseOptions(data, path)
}

// ParseOptions reads the outbox table and column names from a connector
// JSON ({"name":…, "config":{…}} or the bare config map), through the same
// parsers the relay uses: the table is table.include.list's single entry,
// the columns are the EventRouter's options. source names the document in
// errors. A list of several tables, or a pattern that is not one plain
// table name, is an error: set Options.Table yourself then.
func ParseOptions(data []byte, source string) (Options, error) {
	cfg, err := config.Parse(data, source, os.LookupEnv)
	if err != nil {
		return Options{}, fmt.Errorf("outbox: %w", err)
	}
	rc, _, err := router.ParseConfig(cfg.Router)
	if err != nil {
		return Options{}, fmt.Errorf("outbox: %s: %w", source, err)
	}
	table, err := tableFromIncludeList(cfg.Postgres["table.include.list"])
	if err != nil && !rc.Messages {
		return Options{}, fmt.Errorf("outbox: %s: %w", source, err)
	}
	include, exclude := cfg.Postgres["message.prefix.include.list"], cfg.Postgres["message.prefix.exclude.list"]
	prefix, err := literalPrefix(include, exclude)
	if err != nil {
		return Options{}, fmt.Errorf("outbox: %s: %w", source, err)
	}
	o := Options{
		Table:            table,
		IDColumn:         rc.EventIDField,
		KeyColumn:        rc.EventKeyField,
		RouteColumn:      rc.RouteByField,
		PayloadColumn:    rc.PayloadField,
		TopicRegex:       rc.RouteTopicRegex,
		TopicReplacement: rc.RouteTopicReplacement,
		Alias:            rc.Alias,

		SpanContextColumn: rc.TracingSpanContextField,
		MessagePrefix:     prefix,

		MessagePrefixIncludeList: include,
		MessagePrefixExcludeList: exclude,
	}
	if err := o.Validate(); err != nil {
		return Options{}, err
	}
	return o, nil
}

// literalPrefix is the prefix an Emitter writes with for these lists:
// the include list's one literal entry, or empty (the default) without an
// include list. An include list that is not one prefix is an error asking
// for Options.MessagePrefix, rather than a default it may not match.
func literalPrefix(include, exclude string) (string, error) {
	f, err := msgprefix.Parse(include, exclude)
	if err != nil {
		return "", err
	}
	if len(f.Include) == 0 {
		return "", nil
	}
	prefix, ok := f.Literal()
	if !ok {
		return "", fmt.Errorf("message.prefix.include.list %q is not one literal prefix, so the prefix to emit with is not known; set Options.MessagePrefix to a prefix the list matches", include)
	}
	return prefix, nil
}

// plainTable is a schema.table pattern with no regex operator except
// escaped dots.
var plainTable = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]*(\\?\.[A-Za-z_][A-Za-z0-9_$]*)?$`)

// tableFromIncludeList turns table.include.list (regexes matched against
// schema.table) into the one table it names.
func tableFromIncludeList(list string) (string, error) {
	var entries []string
	for _, e := range strings.Split(list, ",") {
		if e = strings.TrimSpace(e); e != "" {
			entries = append(entries, e)
		}
	}
	switch {
	case len(entries) == 0:
		return "", fmt.Errorf("table.include.list is empty; name the outbox table, e.g. public.outbox")
	case len(entries) > 1:
		return "", fmt.Errorf("table.include.list names %d tables (%s); a Writer writes one: set Options.Table", len(entries), list)
	case !plainTable.MatchString(entries[0]):
		return "", fmt.Errorf("table.include.list entry %q is a pattern, not one table name; set Options.Table", entries[0])
	}
	// An unescaped dot is a regex wildcard, but in practice it is meant as
	// the separator; both spellings name the same table.
	return strings.Replace(entries[0], `\.`, ".", 1), nil
}

// Topic returns the topic the relay sends an event with this route value
// (Event.AggregateType) to, by the same route.topic.regex and
// route.topic.replacement, so a consumer can find its topic from the
// connector JSON too. o must be validated (LoadOptions, ParseOptions and
// Validate do that).
func (o Options) Topic(route string) (string, error) {
	r, err := router.New(o.routerConfig(), nil)
	if err != nil {
		return "", fmt.Errorf("outbox: %w", err)
	}
	topic, err := r.Topic([]byte(route))
	if err != nil {
		return "", fmt.Errorf("outbox: route value %q: %w", route, err)
	}
	return topic, nil
}
