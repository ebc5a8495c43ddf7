package setup

import (
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/config"
	"github.com/outboxrelay/outboxrelay/internal/confkey"
	"github.com/outboxrelay/outboxrelay/registry"
	"github.com/outboxrelay/outboxrelay/router"
)

// Regression (issue 26, item 4): the defaults documented in the table of
// keys were read by no code and checked by no test against the parsers.
// A minimal connector file is parsed by every component; each declared
// default must be what the component applies, and every read key with a
// declared default must be checked here or exempted with its reason.
func TestDeclaredDefaultsAreApplied(t *testing.T) {
	doc := `{"database.hostname":"h","database.user":"u","database.dbname":"d","topic.prefix":"p","plugin.name":"pgoutput","bootstrap.servers":"k:9092",
		"table.include.list":"public.outbox","transforms":"outbox","transforms.outbox.type":"io.debezium.transforms.outbox.EventRouter"}`
	cfg, err := config.Parse([]byte(doc), "test.json", os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	set, err := Parse(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	effective := effectiveValues(set)
	for _, d := range confkey.Keys() {
		if d.Sections == 0 || d.Default == "" {
			continue
		}
		if why, ok := notStored[d.Key]; ok {
			if _, also := effective[d.Key]; also || why == "" {
				t.Errorf("%s is both exempted and checked, or exempted without a reason", d.Key)
			}
			continue
		}
		got, ok := effective[d.Key]
		if !ok {
			t.Errorf("%s: declared default %q is not checked against its parser; add it to effectiveValues, or to notStored with the reason", d.Key, d.Default)
			continue
		}
		if got != d.Default {
			t.Errorf("%s: the parser applies %q, the declaration says %q", d.Key, got, d.Default)
		}
	}
	for k := range effective {
		if d, ok := confkey.Declared(confkey.Keys(), k); !ok || d.Default == "" {
			t.Errorf("effectiveValues checks %s, which declares no default", k)
		}
	}
}

// notStored are keys with a declared default that no component keeps a
// value of, and why.
var notStored = map[string]string{
	"header.converter":     "the router accepts only SimpleHeaderConverter and keeps no choice",
	"binary.handling.mode": "checked only when messages are routed; bytes is the only mode the decoder accepts",
	"skipped.operations":   "accepted; the router skips updates, deletes and truncates whatever it says",
	"acks":                 "checked only: the producer always waits for acks=all",
	"ssl.truststore.type":  "checked only: PEM is the one type read",
	"ssl.keystore.type":    "checked only: PEM is the one type read",
	"key.converter.schema.registry.ssl.truststore.type":   "checked only: PEM is the one type read",
	"key.converter.schema.registry.ssl.keystore.type":     "checked only: PEM is the one type read",
	"value.converter.schema.registry.ssl.truststore.type": "checked only: PEM is the one type read",
	"value.converter.schema.registry.ssl.keystore.type":   "checked only: PEM is the one type read",
	"transforms.<alias>.fields.null.include":              "an option of the decode transformation, read only when it is chained; checked by TestDeclaredDefaultsWithMessages",
}

// effectiveValues renders, in the form one writes in the file, the value
// each component applied for a key.
func effectiveValues(s *Setup) map[string]string {
	r, pg, k := s.Router.Config(), s.Postgres, s.Kafka
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	b := strconv.FormatBool
	opt := func(o string) string { return "transforms.<alias>." + o }
	compression := "none"
	if k.Compression != 0 {
		compression = k.Compression.String()
	}
	required := map[bool]string{true: "required", false: "requested"}
	endpoint := map[bool]string{true: "", false: "https"}
	m := map[string]string{
		opt("table.field.event.id"): r.EventIDField, opt("table.field.event.key"): r.EventKeyField,
		opt("table.field.event.type"): r.EventTypeField, opt("table.field.event.payload"): r.PayloadField,
		opt("table.field.additional.missing"):           r.AdditionalMissing,
		opt("table.fields.additional.error.on.missing"): b(r.AdditionalMissing == "error"),
		opt("table.expand.json.payload"):                b(r.ExpandJSONPayload),
		opt("table.json.payload.null.behavior"):         r.JSONPayloadNullBehavior,
		opt("table.json.payload.empty.array.behavior"):  r.JSONPayloadEmptyArrayBehavior,
		opt("route.by.field"):                           r.RouteByField,
		opt("route.topic.regex"):                        r.RouteTopicRegex,
		opt("route.topic.replacement"):                  r.RouteTopicReplacement,
		opt("route.tombstone.on.empty.payload"):         b(r.RouteTombstoneOnEmptyPayload),
		opt("table.op.invalid.behavior"):                r.OpInvalidBehavior,
		opt("tracing.span.context.field"):               r.TracingSpanContextField,
		opt("tracing.operation.name"):                   r.TracingOperationName,
		opt("tracing.with.context.field.only"):          b(!r.TraceEventsWithoutContext),
		"key.converter":                                 converterClass(r.KeyConverter),
		"value.converter":                               converterClass(r.ValueConverter),
		"decimal.handling.mode":                         r.DecimalHandlingMode,
		"extended.headers.enabled":                      b(r.ExtendedHeaders),
		"errors.tolerance":                              s.Tolerance,
		"exactly.once.support":                          required[s.ExactlyOnceRequired],
		"transaction.boundary":                          s.ExactlyOnce.Boundary,
		"transaction.timeout.ms":                        ms(s.ExactlyOnce.Timeout),
		"offset.flush.interval.ms":                      ms(s.Offsets.Every),
		"offsets.storage.topic":                         s.Offsets.Topic,
		"offsets.storage.replication.factor":            strconv.Itoa(s.Offsets.Replication),
		"database.port":                                 strconv.Itoa(pg.Port),
		"database.primary.port":                         strconv.Itoa(pg.PrimaryPort),
		"database.sslmode":                              pg.SSLMode,
		"database.require_auth":                         pg.RequireAuth,
		"database.channel_binding":                      pg.ChannelBinding,
		"slot.name":                                     pg.Slot,
		"slot.drop.on.stop":                             b(pg.DropSlotOnStop),
		"slot.max.retries":                              strconv.Itoa(pg.SlotMaxRetries),
		"slot.retry.delay.ms":                           ms(pg.SlotRetryDelay),
		"slot.failover":                                 b(pg.SlotFailover),
		"publication.name":                              pg.Publication,
		"publication.autocreate.mode":                   pg.AutoCreate,
		"snapshot.mode":                                 pg.SnapshotMode,
		"heartbeat.interval.ms":                         ms(pg.HeartbeatInterval),
		"topic.heartbeat.prefix":                        strings.TrimSuffix(pg.HeartbeatTopic, "."+pg.TopicPrefix),
		"status.update.interval.ms":                     ms(pg.StatusInterval),
		"errors.max.retries":                            strconv.Itoa(pg.MaxRetries),
		"retriable.restart.connector.wait.ms":           ms(pg.RetryWait),
		"outbox.messages.only":                          b(pg.MessagesOnly),
		"outbox.retention.ms":                           ms(s.Janitor.Retention),
		"outbox.retention.column":                       s.Janitor.Column,
		"outbox.capture.mode":                           s.Poll.Mode,
		"outbox.poll.interval.ms":                       ms(s.Poll.Interval),
		"outbox.poll.batch.size":                        strconv.Itoa(s.Poll.Batch),
		"outbox.poll.dispatched.column":                 s.Poll.Dispatched,
		"outbox.poll.stuck.after.ms":                    ms(s.Poll.StuckAfter),
		"client.id":                                     k.ClientID,
		"linger.ms":                                     ms(k.Linger),
		"batch.size":                                    strconv.Itoa(k.BatchBytes),
		"compression.type":                              compression,
		"max.request.size":                              strconv.Itoa(k.MaxRequestSize),
		"request.timeout.ms":                            ms(k.RequestTimeout),
		"security.protocol":                             k.SecurityProtocol,
		"ssl.endpoint.identification.algorithm":         endpoint[k.TLSSkipHostnameCheck],
		"retry.backoff.ms":                              ms(k.RetryBackoff),
		"retry.backoff.max.ms":                          ms(k.RetryBackoffMax),
		"metadata.max.age.ms":                           ms(k.MetadataMaxAge),
		"allow.auto.create.topics":                      b(k.AllowAutoCreateTopics),
		"enable.idempotence":                            b(!k.DisableIdempotence),
		"buffer.memory":                                 strconv.FormatInt(k.BufferMemory, 10),
	}
	for _, rs := range []registry.Side{s.Registry.Key, s.Registry.Value} {
		p, strategy := rs.Prefix(), "value.subject.name.strategy"
		if rs.IsKey {
			strategy = "key.subject.name.strategy"
		}
		m[p+"auto.register.schemas"] = b(rs.AutoRegister)
		m[p+"use.latest.version"] = b(rs.UseLatest)
		m[p+"latest.compatibility.strict"] = b(rs.LatestStrict)
		m[p+"latest.cache.ttl.sec"] = "-1"
		if rs.LatestTTL >= 0 {
			m[p+"latest.cache.ttl.sec"] = strconv.FormatInt(int64(rs.LatestTTL/time.Second), 10)
		}
		m[p+strategy] = "io.confluent.kafka.serializers.subject." + rs.Strategy.String()
		m[p+"basic.auth.credentials.source"] = rs.Source
	}
	return m
}

func converterClass(c router.Converter) string {
	switch c {
	case router.ConverterString:
		return router.StringConverterClass
	case router.ConverterJSON, router.ConverterJSONWithSchema:
		return router.JSONConverterClass
	}
	return "unknown converter " + c.String()
}

// TestDeclaredDefaultsWithMessages: the decode transformation's option,
// read only when it is chained, gets its declared default.
func TestDeclaredDefaultsWithMessages(t *testing.T) {
	rc, _, err := router.ParseConfig(map[string]string{"transforms": "decode,outbox",
		"transforms.decode.type": router.DecodeMessageClass, "transforms.outbox.type": router.EventRouterClass})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := confkey.Declared(confkey.Keys(), "transforms.<alias>.fields.null.include")
	if got := strconv.FormatBool(rc.FieldsNullInclude); got != d.Default {
		t.Errorf("fields.null.include: the router applies %s, the declaration says %s", got, d.Default)
	}
}
