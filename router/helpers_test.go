package router

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
)

// connectorConfig reads the connector registration of the fixtures (the
// seed's register-outbox.json) and turns its values into strings, as the
// relay's config loader does.
func connectorConfig(t testing.TB) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "router", "connector-outbox.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Config map[string]any `json:"config"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	m := make(map[string]string, len(doc.Config))
	for k, v := range doc.Config {
		m[k] = fmt.Sprint(v)
	}
	return m
}

// withOverrides returns base with the overrides applied; the value "-"
// deletes a key.
func withOverrides(base, overrides map[string]string) map[string]string {
	m := make(map[string]string, len(base)+len(overrides))
	for k, v := range base {
		m[k] = v
	}
	for k, v := range overrides {
		if v == "-" {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m
}

func col(name string, oid uint32, text string) capture.Column {
	return capture.Column{Name: name, OID: oid, Text: []byte(text)}
}

func nullCol(name string, oid uint32) capture.Column {
	return capture.Column{Name: name, OID: oid, Null: true}
}

var (
	testCommitTime  = time.Date(2025, 3, 14, 9, 26, 53, 589793000, time.UTC)
	testProcessedAt = time.Date(2025, 3, 14, 9, 26, 54, 0, time.UTC)
)

// outboxRow is a row of the fixtures' outbox table as pgoutput sends it
// (jsonb in PostgreSQL's text output, with ", " and ": " separators),
// with replacements by column name.
func outboxRow(aggregateType, aggregateID, eventType, payload string, replace ...capture.Column) *Event {
	cols := []capture.Column{
		col("message_id", oidUUID, "0195a3f2-7c1e-7d3a-9b4f-2e8c5d6a1b90"),
		col("aggregate_type", 25, aggregateType),
		col("aggregate_id", 25, aggregateID),
		col("event_type", 25, eventType),
		col("payload", oidJSONB, payload),
		col("status", 25, "PENDING"),
		col("created_at", oidTimestampTZ, "2025-03-14 09:26:53.589793+00"),
		col("updated_at", oidTimestampTZ, "2025-03-14 09:26:53.589793+00"),
		nullCol("sent_at", oidTimestampTZ),
		col("retry_count", oidInt4, "0"),
		nullCol("last_error", 25),
		nullCol("next_retry_at", oidTimestampTZ),
		col("version", oidInt4, "0"),
		nullCol("remark", 25),
	}
	for _, r := range replace {
		found := false
		for i := range cols {
			if cols[i].Name == r.Name {
				cols[i] = r
				found = true
			}
		}
		if !found {
			cols = append(cols, r)
		}
	}
	return &Event{
		Row:         &capture.Row{Op: capture.OpCreate, Columns: cols, Table: "public.outbox", Position: 3},
		CommitLSN:   0x16B374D848,
		CommitTime:  testCommitTime,
		ProcessedAt: testProcessedAt,
	}
}

// without removes columns by name.
func without(ev *Event, names ...string) *Event {
	var cols []capture.Column
	for _, c := range ev.Row.Columns {
		keep := true
		for _, n := range names {
			if c.Name == n {
				keep = false
			}
		}
		if keep {
			cols = append(cols, c)
		}
	}
	ev.Row.Columns = cols
	return ev
}

const (
	ordersPayload   = `{"orderId": 9191642889, "payableAmount": 199.00}`
	paymentsPayload = `{"channel": "wallet", "paymentId": "pay-889900"}`
)

func ordersRow(replace ...capture.Column) *Event {
	return outboxRow("orders", "9191642889", "paid", ordersPayload, replace...)
}

// newTestRouter parses m and builds a Router, failing the test on error.
func newTestRouter(t testing.TB, m map[string]string) *Router {
	t.Helper()
	cfg, _, err := ParseConfig(m)
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	cfg.RunID = "3b241101-e2bb-4255-8caf-4136c566a962"
	r, err := New(cfg, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

func routeOne(t testing.TB, r *Router, ev *Event) Record {
	t.Helper()
	recs, err := r.Route(ev, nil)
	if err != nil {
		t.Fatalf("Route: %v", err)
	}
	if len(recs) != 1 {
		t.Fatalf("Route gave %d records, want 1", len(recs))
	}
	return recs[0]
}
