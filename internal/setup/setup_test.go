package setup

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/config"
)

// TestParseMessages: the decode transformation turns messages on for the
// stream, and poll mode, which cannot read them, is refused.
func TestParseMessages(t *testing.T) {
	base := `{"database.hostname":"h","database.user":"u","database.dbname":"d","topic.prefix":"p","plugin.name":"pgoutput","bootstrap.servers":"k:9092","connector.class":"io.debezium.connector.postgresql.PostgresConnector",
		"table.include.list":"public.outbox","transforms":"decode,outbox",
		"transforms.decode.type":"io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent",
		"transforms.outbox.type":"io.debezium.transforms.outbox.EventRouter"`
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	parse := func(extra string) (*Setup, error) {
		cfg, err := config.Parse([]byte(base+extra+"}"), "test.json", os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		return Parse(cfg, log)
	}
	set, err := parse("")
	if err != nil || !set.Postgres.Messages {
		t.Fatalf("Messages = %v, err %v; want on", set != nil && set.Postgres.Messages, err)
	}
	if _, err := parse(`,"outbox.capture.mode":"poll"`); err == nil || !strings.Contains(err.Error(), "cannot read logical decoding messages") {
		t.Errorf("poll mode with messages: err = %v", err)
	}
}

// outbox.messages.only without the decode transformation would route
// nothing at all: a start-up error.
func TestParseMessagesOnlyNeedsTheDecoder(t *testing.T) {
	doc := `{"database.hostname":"h","database.user":"u","database.dbname":"d","topic.prefix":"p","plugin.name":"pgoutput","bootstrap.servers":"k:9092","connector.class":"io.debezium.connector.postgresql.PostgresConnector",
		"table.include.list":"public\\.none","outbox.messages.only":"true","transforms":"outbox","transforms.outbox.type":"io.debezium.transforms.outbox.EventRouter"}`
	cfg, err := config.Parse([]byte(doc), "test.json", os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(cfg, slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil || !strings.Contains(err.Error(), "outbox.messages.only is true but transforms has no") {
		t.Errorf("err = %v, want the missing decoder named", err)
	}
}

// Regression: review-16 finding 11. The prefix lists lost their "no
// effect" note: without the decode transformation they change nothing,
// and nobody was told.
func TestParsePrefixListsWithoutTheDecoder(t *testing.T) {
	doc := `{"database.hostname":"h","database.user":"u","database.dbname":"d","topic.prefix":"p","plugin.name":"pgoutput","bootstrap.servers":"k:9092","connector.class":"io.debezium.connector.postgresql.PostgresConnector",
		"table.include.list":"public.outbox","message.prefix.include.list":"orders","transforms":"outbox","transforms.outbox.type":"io.debezium.transforms.outbox.EventRouter"}`
	cfg, err := config.Parse([]byte(doc), "test.json", os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	if _, err := Parse(cfg, slog.New(slog.NewTextHandler(&logged, nil))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logged.String(), "message.prefix.include.list / message.prefix.exclude.list have no effect") {
		t.Errorf("no warning; log:\n%s", logged.String())
	}
}

// Regression (review of issue 17, finding 5): an interval of
// transaction.boundary=interval at or above half of
// transaction.timeout.ms was accepted; an idle open transaction then
// outlived the timeout, the coordinator aborted it and the relay stopped
// as fenced. It is refused, naming both keys.
func TestParseExactlyOnce(t *testing.T) {
	o := OffsetsConfig{Connector: "c", Every: time.Second}
	for _, tc := range []struct {
		relay map[string]string
		err   string // "" for none
	}{
		{map[string]string{"exactly.once.support": "required"}, ""},
		{map[string]string{"exactly.once.support": "required", "transaction.boundary": "interval", "transaction.boundary.interval.ms": "29999"}, ""},
		{map[string]string{"exactly.once.support": "required", "transaction.boundary": "interval", "transaction.boundary.interval.ms": "30000"},
			"transaction.boundary.interval.ms 30000 must be under half of transaction.timeout.ms 60000"},
		{map[string]string{"exactly.once.support": "required", "transaction.boundary": "interval", "transaction.boundary.interval.ms": "120000", "transaction.timeout.ms": "300000"}, ""},
		{map[string]string{"exactly.once.support": "required", "transaction.timeout.ms": "x"}, "transaction.timeout.ms \"x\""},
	} {
		required, _, err := parseExactlyOnce(tc.relay, o, false)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%v: %v", tc.relay, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%v: error %v, want one with %q", tc.relay, err, tc.err)
		case tc.err == "" && !required:
			t.Errorf("%v: not required", tc.relay)
		}
	}
}

// enable.idempotence=false with exactly.once.support=required is refused
// (review of issue 17a, finding 9: it was silently ignored, the
// transactional sink being idempotent whatever it said), as Java refuses a
// transactional.id with idempotence disabled; either alone is accepted.
func TestParseExactlyOnceNeedsIdempotence(t *testing.T) {
	base := `{"database.hostname":"h","database.user":"u","database.dbname":"d","topic.prefix":"p","plugin.name":"pgoutput","bootstrap.servers":"k:9092","connector.class":"io.debezium.connector.postgresql.PostgresConnector",
		"table.include.list":"public.outbox","transforms":"outbox","transforms.outbox.type":"io.debezium.transforms.outbox.EventRouter"`
	for _, tc := range []struct {
		extra   string
		refused bool
	}{
		{`,"exactly.once.support":"required","enable.idempotence":"false"`, true},
		{`,"exactly.once.support":"required","producer.override.enable.idempotence":"false"`, true},
		{`,"exactly.once.support":"required","enable.idempotence":"true"`, false},
		{`,"exactly.once.support":"required"`, false},
		{`,"enable.idempotence":"false"`, false},
	} {
		cfg, err := config.Parse([]byte(base+tc.extra+"}"), "test.json", os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Parse(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		refused := err != nil && strings.Contains(err.Error(), "enable.idempotence=false with exactly.once.support=required")
		if refused != tc.refused || (err != nil && !refused) {
			t.Errorf("%s: err = %v, want refused %v", tc.extra, err, tc.refused)
		}
	}
}

// The schema-registry converters: their keys reach the registry's
// configuration; a converter whose format is not built in (Formats) is a
// start-up error naming the key; without one there is no converter stage.
func TestParseRegistryConverter(t *testing.T) {
	base := `{"database.hostname":"h","database.user":"u","database.dbname":"d","topic.prefix":"p","plugin.name":"pgoutput","bootstrap.servers":"k:9092",
		"table.include.list":"public.outbox","transforms":"outbox","transforms.outbox.type":"io.debezium.transforms.outbox.EventRouter"`
	parse := func(extra string) (*Setup, error) {
		cfg, err := config.Parse([]byte(base+extra+"}"), "test.json", os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		return Parse(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	set, err := parse("")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := set.Converter(); c != nil || err != nil {
		t.Errorf("no registry converter: Converter() = %v, %v; want nil, nil", c, err)
	}
	_, err = parse(`,"value.converter":"io.confluent.connect.avro.AvroConverter","value.converter.schema.registry.url":"http://r:8081"`)
	if _, built := Formats()["io.confluent.connect.avro.AvroConverter"]; built && err != nil {
		t.Errorf("AvroConverter built in: err = %v", err)
	} else if !built && (err == nil || !strings.Contains(err.Error(), "value.converter: io.confluent.connect.avro.AvroConverter is not built into this binary")) {
		t.Errorf("AvroConverter not built in: err = %v", err)
	}
	_, err = parse(`,"key.converter":"io.confluent.connect.json.JsonSchemaConverter"`)
	if err == nil || !strings.Contains(err.Error(), "key.converter.schema.registry.url is required") {
		t.Errorf("no registry URL: err = %v", err)
	}
}
