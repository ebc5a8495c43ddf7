package conformance

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Poll mode against logical mode: the same case runs through two
// outboxrelay processes on one schema, one streaming from its slot, one
// polling the tables (outbox.capture.mode=poll), each into its own topic
// namespace. Their records must be byte-equal, aggregate by aggregate:
// same topic, partition, key, headers and value, in the same order per
// key. (Across keys poll mode orders by the order column within a batch,
// not by commit; record timestamps are not compared: poll mode stamps the
// claim time, logical mode the commit time.)

// rowChanges matches a run section that changes or removes rows: poll mode
// sees the table's state when it polls, not its history, so such cases are
// not for this comparison.
var rowChanges = regexp.MustCompile(`(?im)^\s*(update|delete|truncate)\b`)

// PollComparable reports whether a case only inserts rows. Cases that
// route logical decoding messages are not: they exist only in the WAL,
// which poll mode does not read (a start-up error there). Nor are cases
// that restart the two sides (Restarts).
func PollComparable(c *Case) bool {
	if c.Messages() || c.Restarts() {
		return false
	}
	for _, s := range c.Steps {
		if rowChanges.MatchString(s.SQL) {
			return false
		}
	}
	return !rowChanges.MatchString(c.Setup)
}

// RunPoll runs one case in logical and in poll mode and compares.
func (e *Env) RunPoll(ctx context.Context, c *Case, idx int) *Verdict {
	n := e.names(idx)
	logical, polled, err := e.runPoll(ctx, c, n)
	if err != nil {
		return &Verdict{Case: c, Err: err, Debezium: len(logical), Relay: len(polled)}
	}
	return ComparePoll(c, logical, polled)
}

func (e *Env) runPoll(ctx context.Context, c *Case, n names) (logical, polled []Record, err error) {
	admin, err := pgx.Connect(ctx, e.PGURL)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	defer admin.Close(context.Background())
	defer e.cleanup(admin, n)
	if err := e.prepare(ctx, admin, c, n); err != nil {
		return nil, nil, err
	}
	// Every table of the schema gets the dispatched column and an order
	// column, and the role may set the first. The order column is a
	// bigserial: the fixture's time-ordered ids are ordered only to the
	// millisecond (docs/poll-mode.md).
	prep := []string{fmt.Sprintf(`DO $$DECLARE r record; BEGIN
		FOR r IN SELECT tablename FROM pg_tables WHERE schemaname = '%[1]s' LOOP
			EXECUTE format('ALTER TABLE %%I.%%I ADD COLUMN dispatched_at timestamptz, ADD COLUMN poll_seq bigserial', '%[1]s', r.tablename);
		END LOOP; END$$`, n.schema),
		fmt.Sprintf("GRANT UPDATE ON ALL TABLES IN SCHEMA %s TO debezium", n.schema)}
	for _, s := range prep {
		if _, err := admin.Exec(ctx, s); err != nil {
			return nil, nil, fmt.Errorf("preparing %s for poll mode: %s: %w", c.ID, firstLine(s), err)
		}
	}
	base, err := e.connectorConfig(c, n)
	if err != nil {
		return nil, nil, err
	}
	lr, err := e.startRelay(c, n, withNamespace(base, n.slotR, n.nsR), "_logical")
	if err != nil {
		return nil, nil, err
	}
	defer lr.stop()
	pcfg := withNamespace(base, n.slotD, n.nsD)
	pcfg["outbox.capture.mode"] = "poll"
	pcfg["outbox.poll.interval.ms"] = "100"
	pcfg["outbox.poll.order.column"] = "poll_seq"
	pr, err := e.startRelay(c, n, pcfg, "_poll")
	if err != nil {
		return nil, nil, err
	}
	defer pr.stop()
	if err := e.waitSlotStreaming(ctx, admin, n.slotR, lr); err != nil {
		return nil, nil, err
	}
	if err := runSteps(ctx, e.PGURL, n.schema, c, nil); err != nil {
		return nil, nil, err
	}
	return e.readBoth(ctx, c, n, lr, pr)
}

// readBoth reads the two namespaces until both have the case's records and
// then stayed quiet, or the timeout passed.
func (e *Env) readBoth(ctx context.Context, c *Case, n names, lr, pr *relayProc) (logical, polled []Record, err error) {
	deadline := time.Now().Add(e.Timeout)
	var quietUntil time.Time
	for {
		if logical, err = readNamespace(ctx, e.Brokers, n.nsR); err != nil {
			return nil, nil, err
		}
		if polled, err = readNamespace(ctx, e.Brokers, n.nsD); err != nil {
			return nil, nil, err
		}
		now := time.Now()
		if quietUntil.IsZero() && len(logical) >= c.Records && len(polled) >= c.Records {
			quietUntil = now.Add(e.Quiet)
		}
		if (!quietUntil.IsZero() && now.After(quietUntil)) || (quietUntil.IsZero() && now.After(deadline)) {
			return logical, polled, nil
		}
		for _, p := range []*relayProc{lr, pr} {
			if p.exited() {
				return logical, polled, fmt.Errorf("outboxrelay exited: %s", p.tail())
			}
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitSlotStreaming waits until a walsender streams from slot.
func (e *Env) waitSlotStreaming(ctx context.Context, admin *pgx.Conn, slot string, relay *relayProc) error {
	deadline := time.Now().Add(90 * time.Second)
	for {
		var active int
		err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_replication_slots s JOIN pg_stat_replication r ON r.pid = s.active_pid
			WHERE s.slot_name = $1 AND r.state = 'streaming'`, slot).Scan(&active)
		if err != nil {
			return err
		}
		if active == 1 {
			return nil
		}
		if relay.exited() {
			return fmt.Errorf("outboxrelay exited before streaming: %s", relay.tail())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("slot %s not streaming after 90 s", slot)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ComparePoll checks poll mode's records against logical mode's, key by
// key within each topic and partition. In the Verdict, Debezium stands for
// logical mode and Relay for poll mode.
func ComparePoll(c *Case, logical, polled []Record) *Verdict {
	v := &Verdict{Case: c, Debezium: len(logical), Relay: len(polled), DebeziumRecords: logical, RelayRecords: polled}
	if len(logical) != c.Records {
		v.problem("logical mode wrote %d records, the case expects %d", len(logical), c.Records)
	}
	if len(polled) != c.Records {
		v.problem("poll mode wrote %d records, the case expects %d", len(polled), c.Records)
	}
	type where struct {
		tp  topicPartition
		key string
	}
	byKey := func(recs []Record) (map[where][]Record, []where) {
		m := map[where][]Record{}
		var order []where
		for _, r := range recs {
			w := where{topicPartition{r.Topic, r.Partition}, string(r.Key)}
			if _, ok := m[w]; !ok {
				order = append(order, w)
			}
			m[w] = append(m[w], r)
		}
		return m, order
	}
	lm, order := byKey(logical)
	pm, porder := byKey(polled)
	for _, w := range porder {
		if _, ok := lm[w]; !ok {
			order = append(order, w)
		}
	}
	for _, w := range order {
		l, p := lm[w], pm[w]
		at := fmt.Sprintf("%s key %s", w.tp, show([]byte(w.key)))
		if len(l) != len(p) {
			v.problem("%s: logical mode %d records, poll mode %d", at, len(l), len(p))
			continue
		}
		if c.PollOrderColumn {
			l, p = byID(l), byID(p)
			v.observe("poll-order-column")
		}
		for i := range l {
			comparePolled(v, fmt.Sprintf("%s #%d", at, i+1), l[i], p[i])
		}
	}
	return v
}

// comparePolled wants two records byte-equal; only a context runId header
// (random per start) may differ, as a UUID.
func comparePolled(v *Verdict, where string, l, p Record) {
	if !bytes.Equal(l.Value, p.Value) || (l.Value == nil) != (p.Value == nil) {
		v.problem("%s: value: logical %s, poll %s", where, show(l.Value), show(p.Value))
	}
	if len(l.Headers) != len(p.Headers) {
		v.problem("%s: headers: logical %s, poll %s", where, showHeaders(l.Headers), showHeaders(p.Headers))
		return
	}
	for i := range l.Headers {
		lh, ph := l.Headers[i], p.Headers[i]
		same := lh.Key == ph.Key && bytes.Equal(lh.Value, ph.Value) && (lh.Value == nil) == (ph.Value == nil)
		if !same && !(lh.Key == ph.Key && lh.Key == contextHeaderPrefix+"runId" && isUUID(lh.Value) && isUUID(ph.Value)) {
			v.problem("%s: headers: logical %s, poll %s", where, showHeaders(l.Headers), showHeaders(p.Headers))
			return
		}
	}
}

// byID returns recs sorted by their id header, to compare one key's
// records as sets.
func byID(recs []Record) []Record {
	id := func(r Record) string {
		for _, h := range r.Headers {
			if h.Key == "id" {
				return string(h.Value)
			}
		}
		return ""
	}
	out := slices.Clone(recs)
	slices.SortStableFunc(out, func(a, b Record) int { return strings.Compare(id(a), id(b)) })
	return out
}
