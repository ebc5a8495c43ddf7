package outbox_test

import (
	"os"
	"strings"
	"testing"

	"github.com/outboxrelay/outboxrelay/outbox"
)

func TestParseOptions(t *testing.T) {
	tests := []struct {
		file string
		want outbox.Options
	}{
		{"../testdata/connector.json", outbox.Options{
			Table: "public.outbox", IDColumn: "message_id", KeyColumn: "aggregate_id", RouteColumn: "aggregate_type",
			PayloadColumn: "payload", TopicRegex: "(?<routedByValue>.*)", TopicReplacement: "${routedByValue}", Alias: "outbox", SpanContextColumn: "tracingspancontext",
		}},
		{"../testdata/article/connector.json", outbox.Options{
			Table: "public.events_outbox", IDColumn: "id", KeyColumn: "aggregate_id", RouteColumn: "type",
			PayloadColumn: "payload", TopicRegex: `(?<routedByValue>[^.]+)(\..*)?`, TopicReplacement: "${routedByValue}", Alias: "outbox", SpanContextColumn: "tracingspancontext",
		}},
	}
	for _, tt := range tests {
		got, err := outbox.LoadOptions(tt.file)
		if err != nil {
			t.Fatalf("%s: %v", tt.file, err)
		}
		if got != tt.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.file, got, tt.want)
		}
	}
}

func TestParseOptionsTables(t *testing.T) {
	base, err := os.ReadFile("../testdata/connector.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		list, want, wantErr string
	}{
		{`public\\.outbox`, "public.outbox", ""},
		{`outbox`, "public.outbox", ""},
		{`app.events`, "app.events", ""},
		{`public.outbox,public.other`, "", "names 2 tables"},
		{`public\\.outbox_.*`, "", "is a pattern"},
	}
	for _, tt := range tests {
		doc := strings.Replace(string(base), `"public.outbox"`, `"`+tt.list+`"`, 1)
		got, err := outbox.ParseOptions([]byte(doc), "connector.json")
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "table.include.list") {
				t.Errorf("%s: err %v, want one containing %q and the key", tt.list, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got.Table != tt.want {
			t.Errorf("%s: got %q, %v; want %q", tt.list, got.Table, err, tt.want)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	var o outbox.Options
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	want := outbox.Options{Table: "public.outbox", IDColumn: "id", KeyColumn: "aggregateid", RouteColumn: "aggregatetype",
		PayloadColumn: "payload", TopicRegex: "(?<routedByValue>.*)", TopicReplacement: "outbox.event.${routedByValue}", Alias: "outbox", SpanContextColumn: "tracingspancontext"}
	if o != want {
		t.Errorf("defaults:\n got %+v\nwant %+v (the router's defaults)", o, want)
	}
	bad := []struct {
		o    outbox.Options
		want string
	}{
		{outbox.Options{Table: "a.b.c"}, "not schema.table"},
		{outbox.Options{KeyColumn: "payload"}, `column "payload" is named by both`},
		{outbox.Options{TopicRegex: "(unclosed"}, "route.topic.regex"},
	}
	for _, b := range bad {
		if err := b.o.Validate(); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%+v: err %v, want %q", b.o, err, b.want)
		}
	}
}

func TestOptionsTopic(t *testing.T) {
	o, err := outbox.LoadOptions("../testdata/article/connector.json")
	if err != nil {
		t.Fatal(err)
	}
	for route, want := range map[string]string{"order.placed": "order", "payment.captured.late": "payment", "customer": "customer"} {
		if got, err := o.Topic(route); err != nil || got != want {
			t.Errorf("Topic(%q) = %q, %v; want %q", route, got, err, want)
		}
	}
	if _, err := o.Topic("no spaces.x"); err == nil {
		t.Error("Topic of a route giving an illegal topic name succeeded")
	}
}

// Regression: review-16 finding 1. A message.prefix.include.list that was
// not one plain word ("orders.v1", "orders,payments", "orders-.*") left
// MessagePrefix empty, NewEmitter fell back to "outbox" with no error, and
// the relay skipped every emitted event; an exclude list matching
// "outbox" did the same.
func TestEmitterPrefixAgainstTheRelayLists(t *testing.T) {
	base, err := os.ReadFile("../testdata/connector.json")
	if err != nil {
		t.Fatal(err)
	}
	withLists := func(lists string) []byte {
		return []byte(strings.Replace(string(base), `"tasks.max": "1",`, `"tasks.max": "1",`+lists, 1))
	}
	for list, want := range map[string]string{`orders.v1`: "orders.v1", `orders\\.v1`: "orders.v1", `Orders`: "Orders"} {
		o, err := outbox.ParseOptions(withLists(`"message.prefix.include.list": "`+list+`",`), "c.json")
		if err != nil || o.MessagePrefix != want {
			t.Fatalf("include list %s: prefix %q, %v; want %q", list, o.MessagePrefix, err, want)
		}
		if e, err := outbox.NewEmitter(o); err != nil || e.Prefix() != want {
			t.Errorf("include list %s: emitter %v", list, err)
		}
	}
	for _, list := range []string{`orders,payments`, `orders-.*`} {
		_, err := outbox.ParseOptions(withLists(`"message.prefix.include.list": "`+list+`",`), "c.json")
		if err == nil || !strings.Contains(err.Error(), "Options.MessagePrefix") {
			t.Errorf("include list %s: err %v, want one asking for Options.MessagePrefix", list, err)
		}
	}
	o, err := outbox.ParseOptions(withLists(`"message.prefix.exclude.list": "out.*",`), "c.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := outbox.NewEmitter(o); err == nil || !strings.Contains(err.Error(), `"outbox" is skipped`) {
		t.Errorf("exclude list matching the default prefix: err %v", err)
	}
	o.MessagePrefix = "orders"
	if _, err := outbox.NewEmitter(o); err != nil {
		t.Errorf("a prefix the exclude list lets through: %v", err)
	}
	// Set by hand, the prefix is still checked against the lists.
	hand := outbox.Options{MessagePrefix: "payments", MessagePrefixIncludeList: "orders-.*"}
	if _, err := outbox.NewEmitter(hand); err == nil || !strings.Contains(err.Error(), "message.prefix.include.list") {
		t.Errorf("a prefix the include list does not match: err %v", err)
	}
	hand.MessagePrefix = "orders-eu"
	if _, err := outbox.NewEmitter(hand); err != nil {
		t.Errorf("a prefix the include list matches: %v", err)
	}
}
