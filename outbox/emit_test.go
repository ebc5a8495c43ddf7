package outbox

import (
	"context"
	"encoding/json"
	"errors"
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
	stmt, args, err := e.build(context.Background(), []Event{ev, {AggregateType: "orders", AggregateID: "k", Payload: map[string]int{"b": 2}}})
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
		if _, _, err := e.build(context.Background(), []Event{bad}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// Regression: review-16 finding 3. The Emitter rendered an Event.Columns
// entry named like one of the Event's own members as a second member
// (routed differently by Debezium and, before, by the relay), and a nil
// pointer or JSON-null payload as "payload":null, which Debezium's decoder
// leaves out and the EventRouter then fails on: a poison message after the
// application committed. The table Writer refuses both.
func TestEmitterRefusesWhatTheWriterRefuses(t *testing.T) {
	e, err := NewEmitter(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"id", "aggregatetype", "aggregateid", "payload"} {
		ev := Event{ID: "e-1", AggregateType: "orders", AggregateID: "k", Payload: 1, Columns: map[string]any{name: "2"}}
		_, _, err := e.build(context.Background(), []Event{{AggregateType: "orders", AggregateID: "k", Payload: 1}, ev})
		var ce *ColumnError
		if !errors.As(err, &ce) || ce.Column != name || ce.Event != 1 || ce.EventID != "e-1" || !strings.Contains(err.Error(), "already filled") {
			t.Errorf("Columns[%q]: err %v, want a *ColumnError for event 1 on that column", name, err)
		}
	}
	var nilMap *map[string]int
	for name, p := range map[string]any{"nil pointer": nilMap, "bytes": []byte(" null "), "raw": json.RawMessage("null")} {
		ev := Event{AggregateType: "orders", AggregateID: "k", Payload: p}
		if _, err := e.Content(&ev); err == nil || !strings.Contains(err.Error(), "JSON null") {
			t.Errorf("%s payload: err %v, want the JSON null refusal", name, err)
		}
	}
	// A null among Event.Columns is only left out by Debezium: allowed.
	ev := Event{AggregateType: "orders", AggregateID: "k", Payload: "p", Columns: map[string]any{"note": nil}}
	if _, err := e.Content(&ev); err != nil {
		t.Errorf("a null extra column: %v", err)
	}
}
