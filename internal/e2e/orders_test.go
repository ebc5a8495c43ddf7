package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// ordersExample is the examples/orders binary and its environment for
// one fixture.
type ordersExample struct {
	bin, cfg string
	env      []string
}

// newOrdersExample builds examples/orders and writes its connector JSON
// (examples/orders/connector.json pointed at the fixture: address, slot,
// publication, table, and topics under the fixture's name), then runs its
// setup.
func newOrdersExample(t *testing.T, f *fixture) *ordersExample {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "orders")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/outboxrelay/outboxrelay/examples/orders").CombinedOutput(); err != nil {
		t.Fatalf("building examples/orders: %v\n%s", err, out)
	}
	cfg := testbed.ConnectorFile(t, "", "../../examples/orders/connector.json", f.connectorOverrides(t, map[string]any{
		"transforms.outbox.route.topic.replacement": f.name + ".${routedByValue}"}))
	e := &ordersExample{bin: bin, cfg: cfg,
		env: []string{"DATABASE_URL=" + testbed.Postgres(t), "KAFKA_BROKERS=" + testbed.KafkaBrokers(t)}}
	testbed.Exec(t, f.admin, `DROP PUBLICATION `+f.name) // setup creates it over events_outbox
	e.run(t, "setup", "--publication", f.name)
	return e
}

// run runs one command of the example to its end and returns its output.
func (e *ordersExample) run(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(e.bin, append([]string{args[0], "--config", e.cfg}, args[1:]...)...)
	cmd.Env = append(os.Environ(), e.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("orders %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// start runs a command of the example in the background.
func (e *ordersExample) start(t *testing.T, name string, env []string, args ...string) *relayProc {
	t.Helper()
	return startProcess(t, name, append(append([]string{}, e.env...), env...), e.bin, append([]string{args[0], "--config", e.cfg}, args[1:]...)...)
}

// TestOrdersExample is the example service under faults: 2,000 orders
// from 4 concurrent writers, about 10% rolled back on a unique-key
// violation; the relay SIGKILLed twice while they are written; the
// loyalty consumer SIGKILLed 3 times, once by its own hook between the
// side effect's commit and the offset commit. Then the group is reset to
// the earliest offsets and everything is read again. loyalty_points must
// be exactly the committed orders' points, processed_events one row per
// committed event, and no rolled-back order may have produced an event.
func TestOrdersExample(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "orders")
	ex := newOrdersExample(t, f)
	topic := f.name + ".order"
	rolledBackFile := filepath.Join(t.TempDir(), "rolled-back")
	loyalty := placeOrdersUnderFaults(t, f, ex, rolledBackFile)
	loyalty.stop(t, 30*time.Second)

	committedOrders := f.count(t, `SELECT count(*) FROM `+f.name+`.orders`)
	rolledBack := readLines(t, rolledBackFile)
	t.Logf("%d orders committed, %d rolled back", committedOrders, len(rolledBack))
	if committedOrders+len(rolledBack) != 2000 || len(rolledBack) < 100 || len(rolledBack) > 300 {
		t.Fatalf("%d committed + %d rolled back; want 2000 in all, about 10%% rolled back", committedOrders, len(rolledBack))
	}
	checkOrderTotals(t, f, committedOrders)
	records := checkRelayedOrders(t, topic, committedOrders, rolledBack)

	// Replay: the group from the earliest offsets; every record is a
	// duplicate and nothing changes.
	ex.run(t, "reset")
	replay := ex.start(t, "loyalty-replay", nil, "loyalty")
	waitGroupAtEnd(t, topic, 90*time.Second)
	replay.stop(t, 30*time.Second)
	m := regexp.MustCompile(`points applied for (\d+) events, (\d+) duplicates skipped`).FindStringSubmatch(replay.log())
	if m == nil || m[1] != "0" || m[2] != strconv.Itoa(records) {
		t.Fatalf("replay: %q; want 0 applied and %d duplicates", m, records)
	}
	checkOrderTotals(t, f, committedOrders)
	t.Log(strings.TrimSpace(ex.run(t, "report")))
}

// placeOrdersUnderFaults runs the relay, the loyalty consumer and 2,000
// orders from 4 writers; it SIGKILLs the relay twice while the orders are
// written and the consumer 3 times (first by its own hook, between the
// commit of its 300th event and that event's offset commit), and returns
// the consumer that is running when every committed order is processed.
func placeOrdersUnderFaults(t *testing.T, f *fixture, ex *ordersExample, rolledBackFile string) *relayProc {
	t.Helper()
	relay := startRelay(t, ex.cfg)
	f.waitStreaming(t)
	loyalty := ex.start(t, "loyalty", []string{"LOYALTY_CRASH_AFTER=300"}, "loyalty")
	place := ex.start(t, "place", nil, "place", "--orders", "2000", "--writers", "4", "--pause", "4ms", "--rolled-back-out", rolledBackFile)
	orders := func() int { return f.count(t, `SELECT count(*) FROM `+f.name+`.orders`) }
	processed := func() int { return f.count(t, `SELECT count(*) FROM `+f.name+`.processed_events`) }

	relayKills, consumerKills := 0, 0
	hookSeen, placed := false, false
	deadline := time.Now().Add(4 * time.Minute)
	for !placed || consumerKills < 3 || processed() < orders() {
		if time.Now().After(deadline) {
			t.Fatalf("after 4 min: placed=%t, %d relay kills, %d consumer kills, %d of %d orders processed", placed, relayKills, consumerKills, processed(), orders())
		}
		if !placed && place.exited() {
			if code := place.wait(t, time.Second); code != 0 {
				t.Fatalf("orders place exited %d:\n%s", code, place.logTail(20))
			}
			placed = true
		}
		if n := orders(); relayKills < 2 && n >= 600*(relayKills+1) {
			relay.signal(t, syscall.SIGKILL)
			relay.wait(t, 10*time.Second)
			relayKills++
			t.Logf("relay SIGKILL %d at %d orders", relayKills, n)
			relay = startRelay(t, ex.cfg)
		}
		if !hookSeen && loyalty.exited() {
			if code := loyalty.wait(t, time.Second); code != -1 || !strings.Contains(loyalty.log(), "SIGKILL after committing event") {
				t.Fatalf("the first consumer ended with code %d, not by its crash hook:\n%s", code, loyalty.logTail(20))
			}
			hookSeen, consumerKills = true, 1
			t.Logf("consumer SIGKILL 1 (its own hook, after the commit of the 300th event, before its offset commit) at %d processed", processed())
			loyalty = ex.start(t, "loyalty", nil, "loyalty")
		}
		if n := processed(); hookSeen && consumerKills < 3 && n >= 300+400*consumerKills {
			loyalty.signal(t, syscall.SIGKILL)
			loyalty.wait(t, 10*time.Second)
			consumerKills++
			t.Logf("consumer SIGKILL %d at %d processed", consumerKills, n)
			loyalty = ex.start(t, "loyalty", nil, "loyalty")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if relayKills != 2 {
		t.Fatalf("the relay was killed %d times, want 2 (orders were written too fast?)", relayKills)
	}
	return loyalty
}

// checkRelayedOrders checks that every record in topic is a committed
// order's event, each event there at least once (relay restarts may have
// sent some twice), and returns the number of records.
func checkRelayedOrders(t *testing.T, topic string, committedOrders int, rolledBack []string) int {
	t.Helper()
	recs := testbed.Consume(t, topic, nil, committedOrders, 60*time.Second, time.Second)
	rolled := map[string]bool{}
	for _, id := range rolledBack {
		rolled[id] = true
	}
	ids := map[string]bool{}
	for _, m := range recs {
		var o struct {
			OrderID string `json:"order_id"`
		}
		if err := json.Unmarshal(m.Value, &o); err != nil {
			t.Fatalf("record %s/%d@%d: %v", m.Topic, m.Partition, m.Offset, err)
		}
		if rolled[o.OrderID] {
			t.Errorf("rolled-back order %s produced an event (offset %d)", o.OrderID, m.Offset)
		}
		ids[headerValue(m.Headers, "event_id")] = true
	}
	if len(ids) != committedOrders {
		t.Errorf("%d distinct event ids in %d records, want %d", len(ids), len(recs), committedOrders)
	}
	t.Logf("%d records relayed for %d events", len(recs), len(ids))
	return len(recs)
}

// count runs a query that returns one integer.
func (f *fixture) count(t *testing.T, sql string) int {
	t.Helper()
	var n int
	if err := f.admin.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// checkOrderTotals checks loyalty_points against the committed orders and
// processed_events against the outbox.
func checkOrderTotals(t *testing.T, f *fixture, committedOrders int) {
	t.Helper()
	var wrong, customers, processed, matched, events int
	var points, want int64
	err := f.admin.QueryRow(context.Background(), fmt.Sprintf(`SELECT
		(SELECT count(*) FROM (SELECT customer_id, sum(total_cents / 100) AS points FROM %[1]s.orders GROUP BY 1) o
			FULL JOIN %[1]s.loyalty_points l USING (customer_id) WHERE o.points IS DISTINCT FROM l.points),
		(SELECT count(*) FROM %[1]s.loyalty_points),
		(SELECT coalesce(sum(points), 0) FROM %[1]s.loyalty_points),
		(SELECT coalesce(sum(total_cents / 100), 0) FROM %[1]s.orders),
		(SELECT count(*) FROM %[1]s.processed_events),
		(SELECT count(*) FROM %[1]s.processed_events p JOIN %[1]s.events_outbox e ON e.id::text = p.event_id
			JOIN %[1]s.orders o ON o.id = e.aggregate_id),
		(SELECT count(*) FROM %[1]s.events_outbox)`, f.name)).Scan(&wrong, &customers, &points, &want, &processed, &matched, &events)
	if err != nil {
		t.Fatal(err)
	}
	if wrong != 0 || points != want {
		t.Errorf("loyalty_points: %d points, want exactly %d; %d of %d customers wrong", points, want, wrong, customers)
	}
	if processed != committedOrders || matched != committedOrders || events != committedOrders {
		t.Errorf("processed_events %d rows (%d matching a committed order's event), outbox %d events; want %d each", processed, matched, events, committedOrders)
	}
}

// waitGroupAtEnd waits until the loyalty group committed the end offset of
// every partition of topic.
func waitGroupAtEnd(t *testing.T, topic string, timeout time.Duration) {
	t.Helper()
	end := testbed.EndOffsets(t, topic)
	parts := make([]int, 0, len(end))
	for p := range end {
		parts = append(parts, p)
	}
	deadline := time.Now().Add(timeout)
	for {
		res, err := kafkaClient(t).OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: "loyalty-points", Topics: map[string][]int{topic: parts}})
		done := err == nil
		if err == nil {
			for _, p := range res.Topics[topic] {
				if p.Error != nil || p.CommittedOffset != end[p.Partition] {
					done = false
				}
			}
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("group loyalty-points not at the end of %s (%v) after %s: %+v, %v", topic, end, timeout, res, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}
