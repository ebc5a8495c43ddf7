package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
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

// pollPair is outboxrelay in logical mode (the reference) against
// outboxrelay in poll mode on the same schema.
type pollPair struct {
	*caseRun
	logical, polled *relayProc
}

func (p *pollPair) namespaces() (ref, got string) { return p.n.nsR, p.n.nsD }

func (p *pollPair) start(ctx context.Context) error {
	e, c, n := p.e, p.c, p.n
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
		if _, err := p.admin.Exec(ctx, s); err != nil {
			return fmt.Errorf("preparing %s for poll mode: %s: %w", c.ID, firstLine(s), err)
		}
	}
	lr, err := e.startRelay(c, n, withNamespace(p.base, n.slotR, n.nsR), "_logical")
	if err != nil {
		return err
	}
	p.logical = lr
	pcfg := withNamespace(p.base, n.slotD, n.nsD)
	pcfg["outbox.capture.mode"] = "poll"
	pcfg["outbox.poll.interval.ms"] = "100"
	pcfg["outbox.poll.order.column"] = "poll_seq"
	pr, err := e.startRelay(c, n, pcfg, "_poll")
	if err != nil {
		return err
	}
	p.polled = pr
	return e.waitStreaming(ctx, p.admin, []string{n.slotR}, p)
}

// restart is not for this pair: PollComparable leaves out the cases that
// restart.
func (p *pollPair) restart(context.Context, int) error {
	return errors.New("poll mode against logical mode runs no restarts")
}

func (p *pollPair) failed(_ context.Context, logicalShort, polledShort bool) error {
	for _, side := range []struct {
		short bool
		relay *relayProc
	}{{logicalShort, p.logical}, {polledShort, p.polled}} {
		if side.short && side.relay != nil && side.relay.exited() {
			return fmt.Errorf("outboxrelay exited: %s", side.relay.tail())
		}
	}
	return nil
}

func (p *pollPair) stop() {
	for _, r := range []*relayProc{p.polled, p.logical} {
		if r != nil {
			r.stop()
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
