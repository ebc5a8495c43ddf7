package main

import (
	"fmt"
	"strings"
)

// Workload numbers the events of one run so that the consumer can check
// them without remembering what was inserted.
//
// Event s (0 ≤ s < Events) belongs to transaction s / RowsPerTx, and
// transaction t is inserted by worker t % Workers. Each worker owns the
// aggregates a with a % Workers == worker and numbers its own events
// 0, 1, 2, … (local index); event local of worker w goes to aggregate
// w + Workers*(local % owned) with per-aggregate sequence local / owned.
// Because one worker commits its transactions one after another, the
// per-aggregate sequences increase in commit order, which is the order a
// relay must keep per key; concurrent workers never share an aggregate.
type Workload struct {
	Run        string   // random id of this run; events of other runs are ignored
	Events     int64    // total events
	RowsPerTx  int      // rows per transaction
	Workers    int      // inserting connections (≤ Aggregates)
	Aggregates int      // distinct aggregate ids (Kafka keys)
	Types      []string // aggregate types (each routes to its own topic)
	EventType  string   // event_type column value
	PadBytes   int      // extra payload bytes ("pad" field)
	// MessagePrefix, when set, writes each event as a transactional
	// logical decoding message with this prefix instead of a table row
	// (an outbox without a table; the relay decodes the messages).
	MessagePrefix string
}

// Validate checks the numbers and clamps Workers to Aggregates so every
// worker owns at least one aggregate.
func (w *Workload) Validate() error {
	switch {
	case w.Events <= 0:
		return fmt.Errorf("--events must be positive")
	case w.RowsPerTx <= 0:
		return fmt.Errorf("--rows-per-tx must be positive")
	case w.Aggregates <= 0:
		return fmt.Errorf("--aggregates must be positive")
	case w.Workers <= 0:
		return fmt.Errorf("--workers must be positive")
	case len(w.Types) == 0:
		return fmt.Errorf("--aggregate-types must name at least one type")
	case w.PadBytes < 0:
		return fmt.Errorf("--payload-bytes must not be negative")
	}
	for _, t := range w.Types {
		if t == "" || strings.ContainsAny(t, "'\\") {
			return fmt.Errorf("--aggregate-types: %q is empty or contains a quote or backslash", t)
		}
	}
	if strings.ContainsAny(w.EventType, "'\\") {
		return fmt.Errorf("--event-type %q contains a quote or backslash", w.EventType)
	}
	if w.Workers > w.Aggregates {
		w.Workers = w.Aggregates
	}
	return nil
}

// Txs is the number of transactions of the run.
func (w *Workload) Txs() int64 {
	k := int64(w.RowsPerTx)
	return (w.Events + k - 1) / k
}

// owned is how many aggregates worker wk owns.
func (w *Workload) owned(wk int) int64 {
	return int64((w.Aggregates - wk + w.Workers - 1) / w.Workers)
}

// Event is what the payload of event s carries.
type Event struct {
	Seq  int64 // 0 ≤ Seq < Events
	Agg  int64 // aggregate index
	ASeq int64 // sequence within the aggregate, from 0
}

// EventAt computes event s's aggregate and per-aggregate sequence; the SQL
// of TxSQL computes the same (tested against each other).
func (w *Workload) EventAt(s int64) Event {
	k := int64(w.RowsPerTx)
	t := s / k
	wk := int(t % int64(w.Workers))
	local := (t/int64(w.Workers))*k + s%k
	own := w.owned(wk)
	return Event{Seq: s, Agg: int64(wk) + int64(w.Workers)*(local%own), ASeq: local / own}
}

// TypeOf is the aggregate type (and so the topic) of aggregate a.
func (w *Workload) TypeOf(a int64) string { return w.Types[a%int64(len(w.Types))] }

// TxSQL is one INSERT … SELECT statement that inserts the rows of
// transaction t into table. Every value is computed in the statement, so
// one round trip inserts any number of rows; ts is clock_timestamp() in
// microseconds since the epoch when the row was made (just before commit).
func (w *Workload) TxSQL(table string, t int64) string {
	k := int64(w.RowsPerTx)
	s0 := t * k
	n := min(k, w.Events-s0)
	wk := t % int64(w.Workers)
	local0 := (t / int64(w.Workers)) * k
	own := w.owned(int(wk))
	var types strings.Builder
	for i, ty := range w.Types {
		if i > 0 {
			types.WriteByte(',')
		}
		fmt.Fprintf(&types, "'%s'", ty)
	}
	pad := ""
	if w.PadBytes > 0 {
		pad = fmt.Sprintf(", 'pad', repeat('x', %d)", w.PadBytes)
	}
	payload := fmt.Sprintf(`jsonb_build_object('run', '%s', 'seq', s, 'a', a, 'aseq', l / %d, 'ts', (extract(epoch FROM clock_timestamp()) * 1000000)::bigint%s)`,
		w.Run, own, pad)
	from := fmt.Sprintf(`FROM (SELECT %d + j AS s, %d + j AS l, %d + %d * ((%d + j) %% %d) AS a FROM generate_series(0, %d) AS j) AS g`,
		s0, local0, wk, w.Workers, local0, own, n-1)
	route := fmt.Sprintf(`(ARRAY[%s])[1 + a %% %d]`, types.String(), len(w.Types))
	if w.MessagePrefix != "" {
		// One message per event, in the events' order (the subquery's).
		return fmt.Sprintf(`SELECT count(pg_logical_emit_message(true, '%s', json_build_object('message_id', gen_random_uuid(), `+
			`'aggregate_type', %s, 'aggregate_id', 'agg-' || a, 'event_type', '%s', 'payload', %s)::text)) %s`,
			w.MessagePrefix, route, w.EventType, payload, from)
	}
	return fmt.Sprintf(`INSERT INTO %s (aggregate_type, aggregate_id, event_type, payload) SELECT %s, 'agg-' || a, '%s', %s %s`,
		table, route, w.EventType, payload, from)
}
