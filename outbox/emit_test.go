package outbox

import (
	"strings"
	"testing"
)

func TestEmitterContent(t *testing.T) {
	e, err := NewEmitter(Options{IDColumn: "message_id", KeyColumn: "aggregate_id", RouteColumn: "aggregate_type"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Prefix() != DefaultMessagePrefix {
		t.Errorf("prefix %q", e.Prefix())
	}
	ev := Event{ID: "e-1", AggregateType: "orders", AggregateID: "o-\"1\"", Payload: []byte(`{"a": 1}`), Columns: map[string]any{"z": 1, "event_type": "Paid", "n": nil}}
	got, err := e.Content(&ev)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"message_id":"e-1","aggregate_type":"orders","aggregate_id":"o-\"1\"","payload":{"a": 1},"event_type":"Paid","n":null,"z":1}`
	if string(got) != want {
		t.Errorf("content\n%s\nwant\n%s", got, want)
	}
	stmt, args, err := e.build([]Event{ev, {AggregateType: "orders", AggregateID: "k", Payload: map[string]int{"b": 2}}})
	if err != nil || len(args) != 3 || !strings.Contains(stmt, "(VALUES ($2::text), ($3::text))") {
		t.Errorf("build: %s %d args, err %v", stmt, len(args), err)
	}
	for name, bad := range map[string]Event{
		"no route":         {AggregateID: "k", Payload: 1},
		"illegal topic":    {AggregateType: "a b", AggregateID: "k", Payload: 1},
		"no key":           {AggregateType: "orders", Payload: 1},
		"no payload":       {AggregateType: "orders", AggregateID: "k"},
		"payload not JSON": {AggregateType: "orders", AggregateID: "k", Payload: []byte("{")},
	} {
		if _, _, err := e.build([]Event{bad}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
