package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/outbox"
)

// articleConfig writes testdata/article/connector.json with only what
// points it at this fixture changed: address, slot, publication, table.
func articleConfig(t *testing.T, f *fixture) string {
	t.Helper()
	return testbed.ConnectorFile(t, "", "../../testdata/article/connector.json", f.connectorOverrides(t, nil))
}

// createArticleTable creates testdata/article/events_outbox.sql in the
// fixture's schema, with a publication over it.
func createArticleTable(t *testing.T, f *fixture) {
	t.Helper()
	ddl, err := os.ReadFile("../../testdata/article/events_outbox.sql")
	if err != nil {
		t.Fatal(err)
	}
	testbed.Exec(t, f.admin,
		`SET search_path TO `+f.name, string(ddl), `RESET search_path`,
		`DROP PUBLICATION `+f.name,
		`CREATE PUBLICATION `+f.name+` FOR TABLE `+f.name+`.events_outbox`,
		`GRANT SELECT ON ALL TABLES IN SCHEMA `+f.name+` TO debezium`)
}

// TestArticleSchema relays the polling article's events_outbox, unchanged,
// with testdata/article/connector.json: each record has topic = the part
// of type before the first dot, key = aggregate_id, an event_id header
// with the row's id, and value = the payload. The rows are written with
// package outbox, its names read from the same file.
func TestArticleSchema(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "article")
	// The route values carry the fixture's name, so the topics are this
	// test's own: "<name>_order", "<name>_payment".
	t.Cleanup(func() { deleteTopics(t, f.name+"_") })
	createArticleTable(t, f)
	cfg := articleConfig(t, f)
	startRelay(t, cfg)
	f.waitStreaming(t)

	types := []string{"order.placed", "order.paid", "payment.captured", "order.shipped.late", "payment"}
	want, perTopic := writeArticleEvents(t, f, cfg, types)
	wantTopic := map[string]string{"order": f.name + "_order", "payment": f.name + "_payment"}

	seen := 0
	for prefix, topic := range wantTopic {
		recs := testbed.Consume(t, topic, nil, perTopic[topic], 60*time.Second, 500*time.Millisecond)
		if len(recs) != perTopic[topic] {
			t.Fatalf("topic %s: %d records, want %d", topic, len(recs), perTopic[topic])
		}
		for _, m := range recs {
			seen++
			id := headerValue(m.Headers, "event_id")
			r, ok := want[id]
			if !ok {
				t.Fatalf("record on %s with event_id %q, which is no row's id", topic, id)
			}
			if got := strings.SplitN(strings.TrimPrefix(r.typ, f.name+"_"), ".", 2)[0]; got != prefix {
				t.Errorf("event %s of type %s went to %s", id, r.typ, topic)
			}
			if string(m.Key) != r.agg {
				t.Errorf("event %s: key %q, want aggregate_id %q", id, m.Key, r.agg)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, []byte(r.payload)); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(m.Value, compact.Bytes()) {
				t.Errorf("event %s: value %s, want the payload %s", id, m.Value, compact.Bytes())
			}
		}
	}
	if seen != len(types) {
		t.Errorf("%d records in all, want %d", seen, len(types))
	}
}

// articleRow is one events_outbox row as text.
type articleRow struct{ id, agg, typ, payload string }

// writeArticleEvents writes one event per type with package outbox, names
// from the connector JSON, each route value prefixed with the fixture's
// name; it returns the rows by id and how many records each topic gets.
func writeArticleEvents(t *testing.T, f *fixture, cfg string, types []string) (map[string]articleRow, map[string]int) {
	t.Helper()
	opts, err := outbox.LoadOptions(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	w, err := outbox.New(ctx, f.admin, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, typ := range types {
		err := pgx.BeginFunc(ctx, f.admin, func(tx pgx.Tx) error {
			return w.Write(ctx, tx, outbox.Event{AggregateType: f.name + "_" + typ, AggregateID: outbox.NewID(),
				Payload: map[string]any{"n": i, "type": typ, "note": "  spaced  "}})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	rows, err := f.admin.Query(ctx, `SELECT id::text, aggregate_id::text, type, payload::text FROM `+f.name+`.events_outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]articleRow{}
	perTopic := map[string]int{}
	for rows.Next() {
		var r articleRow
		if err := rows.Scan(&r.id, &r.agg, &r.typ, &r.payload); err != nil {
			t.Fatal(err)
		}
		want[r.id] = r
		perTopic[f.name+"_"+strings.SplitN(strings.TrimPrefix(r.typ, f.name+"_"), ".", 2)[0]]++
	}
	if rows.Err() != nil || len(want) != len(types) {
		t.Fatalf("%d rows (%v), want %d", len(want), rows.Err(), len(types))
	}
	return want, perTopic
}
