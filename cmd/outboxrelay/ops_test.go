package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func httpGet(addr, path string) (int, string) {
	c := http.Client{Timeout: 2 * time.Second}
	res, err := c.Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func waitReady(t *testing.T, addr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		code, body := httpGet(addr, "/readyz")
		if code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz on %s: %d %q after %s", addr, code, body, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMetricsAndReadyz: /readyz answers 200 once the relay streams and
// Kafka answers; /metrics shows the published events by topic, the
// confirmed LSN and the rest of the documented series; /healthz is 200;
// nothing else is served.
func TestMetricsAndReadyz(t *testing.T) {
	admin := testbed.Admin(t)
	prepareExample(t, admin)
	slot := fmt.Sprintf("metrics_%d", time.Now().UnixNano())
	t.Cleanup(func() { testbed.DropSlot(t, admin, slot) })
	_, addr := startRelayHTTP(t, exampleConfig(t, map[string]any{"slot.name": slot}))
	waitReady(t, addr, 30*time.Second)
	if code, _ := httpGet(addr, "/healthz"); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
	if code, _ := httpGet(addr, "/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("/debug/pprof/: %d; want 404, nothing but the three endpoints", code)
	}

	topic := fmt.Sprintf("metrics%d", time.Now().UnixNano())
	insertExample(t, admin, topic, "a", "x", `{"n":1}`)
	insertExample(t, admin, topic, "b", "x", `{"n":2}`)
	testbed.Consume(t, topic, nil, 2, 30*time.Second, 0)

	want := regexp.MustCompile(`(?m)^outboxrelay_events_published_total\{topic="` + topic + `"\} 2$`)
	deadline := time.Now().Add(10 * time.Second)
	var body string
	for {
		_, body = httpGet(addr, "/metrics")
		if want.MatchString(body) && !strings.Contains(body, "outboxrelay_confirmed_lsn 0\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics never showed 2 events for %s and a confirmed LSN:\n%s", topic, grepLines(body, "outboxrelay_"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, series := range []string{
		"outboxrelay_published_bytes_total{topic=\"" + topic + "\"}", "outboxrelay_records_in_flight ", "outboxrelay_received_lsn ",
		"outboxrelay_replication_lag_bytes ", "outboxrelay_replication_lag_seconds ", "outboxrelay_commit_to_ack_seconds_count 2",
		"outboxrelay_reconnects_total 0", "outboxrelay_dead_lettered_total 0", "outboxrelay_state{state=\"streaming\"} 1",
		"outboxrelay_ready 1", "outboxrelay_snapshot_rows ",
	} {
		if !strings.Contains(body, series) {
			t.Errorf("/metrics lacks %q", series)
		}
	}
	t.Logf("/metrics (outboxrelay_ series):\n%s", grepLines(body, "outboxrelay_"))
}

func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func runCheckCmd(t *testing.T, config string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"check", "--config", config, "--kafka-brokers", testbed.KafkaBrokers(t)}, &out, &errOut)
	t.Logf("outboxrelay check (err %v):\n%s%s", err, out.String(), errOut.String())
	return out.String(), err
}

// TestCheckGood: on the example setup every check passes and check exits 0.
func TestCheckGood(t *testing.T) {
	admin := testbed.Admin(t)
	prepareExample(t, admin)
	// check learns topics from recent rows; on a bed kept across runs the
	// example table holds rows routed to hundreds of earlier test topics,
	// whose lookups alone can spend check's whole time budget.
	testbed.Exec(t, admin, `DELETE FROM public.outbox`)
	insertExample(t, admin, "orders", "9191642889", "paid", `{"orderId":9191642889,"payableAmount":199.00}`)
	out, err := runCheckCmd(t, exampleConfig(t, nil))
	if err != nil || strings.Contains(out, "✗") {
		t.Fatalf("check on the good setup: %v\n%s", err, out)
	}
	for _, line := range []string{"✓ wal_level: logical", "✓ REPLICATION attribute", "✓ publication order_db_outbox: covers public.outbox", "✓ Kafka reachable"} {
		if !strings.Contains(out, line) {
			t.Errorf("check output lacks %q", line)
		}
	}
}

// TestCheckBroken: a missing publication, a missing column, the janitor
// without DELETE and Kafka down each give a ✗ line with its exact fix, and
// check exits non-zero.
func TestCheckBroken(t *testing.T) {
	admin := testbed.Admin(t)
	prepareExample(t, admin)
	pub := fmt.Sprintf("no_pub_%d", time.Now().UnixNano())
	testbed.Exec(t, admin, `REVOKE DELETE ON public.outbox FROM debezium`)
	out, err := runCheckCmd(t, exampleConfig(t, map[string]any{
		"publication.name": pub,
		"transforms.outbox.table.field.event.payload": "body",
		"outbox.retention.ms":                         "60000",
		"bootstrap.servers":                           nil,
	}))
	if err == nil {
		t.Fatal("check passed on a broken setup")
	}
	for _, line := range []string{
		"✗ publication " + pub + ": does not exist (publication.autocreate.mode=disabled)\n    fix: CREATE PUBLICATION " + pub + " FOR TABLE public.outbox;",
		"✗ columns of public.outbox: body (payload) is missing",
		"    fix: ALTER TABLE public.outbox ADD COLUMN body jsonb; -- or set transforms.outbox.table.field.event.payload to an existing column",
		"✗ DELETE on public.outbox",
		"    fix: GRANT DELETE ON public.outbox TO debezium; -- or unset outbox.retention.ms",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("check output lacks %q", line)
		}
	}

	// A role without REPLICATION.
	role := fmt.Sprintf("norepl_%d", time.Now().UnixNano())
	testbed.Exec(t, admin, fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD 'pw'`, role), fmt.Sprintf(`GRANT SELECT ON public.outbox TO %s`, role))
	t.Cleanup(func() {
		testbed.Exec(t, admin, `REVOKE ALL ON public.outbox FROM `+role, `DROP ROLE IF EXISTS `+role)
	})
	out, err = runCheckCmd(t, exampleConfig(t, map[string]any{"database.user": role, "database.password": "pw"}))
	if err == nil || !strings.Contains(out, "✗ REPLICATION attribute: role "+role+" may not open replication connections\n    fix: ALTER ROLE "+role+" REPLICATION;") {
		t.Errorf("check with a role lacking REPLICATION: %v\n%s", err, out)
	}

	// Kafka down: a port nobody listens on.
	out, err = func() (string, error) {
		var o, e bytes.Buffer
		err := run(context.Background(), []string{"check", "--config", exampleConfig(t, nil), "--kafka-brokers", freeAddr(t)}, &o, &e)
		return o.String(), err
	}()
	if err == nil || !strings.Contains(out, "✗ Kafka reachable") || !strings.Contains(out, "fix: check bootstrap.servers") {
		t.Errorf("check with Kafka down: %v\n%s", err, out)
	}
}

// TestFailover: two relays on one slot; one streams, the other stands by
// and is not ready. Cancelling the active one under a steady insert load
// hands over within a few seconds, and every event inserted before, during
// and after the switch reaches Kafka.
func TestFailover(t *testing.T) {
	admin := testbed.Admin(t)
	prepareExample(t, admin)
	slot := fmt.Sprintf("failover_%d", time.Now().UnixNano())
	t.Cleanup(func() { testbed.DropSlot(t, admin, slot) })
	config := exampleConfig(t, map[string]any{"slot.name": slot})
	a, addrA := startRelayHTTP(t, config)
	waitReady(t, addrA, 30*time.Second)
	b, addrB := startRelayHTTP(t, config)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(b.log.String(), "standby") {
		if time.Now().After(deadline) {
			t.Fatalf("second relay never reported standby:\n%s", b.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, body := httpGet(addrB, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "standby") {
		t.Errorf("standby /readyz: %d %q; want 503 saying standby", code, body)
	}

	topic := fmt.Sprintf("failover%d", time.Now().UnixNano())
	var mu sync.Mutex
	var ids []string
	stop := make(chan struct{})
	inserted := make(chan struct{})
	go func() {
		defer close(inserted)
		conn, err := pgx.Connect(context.Background(), testbed.Postgres(t))
		if err != nil {
			t.Errorf("inserter: %v", err)
			return
		}
		defer conn.Close(context.Background())
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			var id string
			err := conn.QueryRow(context.Background(), `INSERT INTO public.outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ($1, $2, 'x', $3) RETURNING message_id::text`,
				topic, fmt.Sprint(i%7), fmt.Sprintf(`{"i":%d}`, i)).Scan(&id)
			if err != nil {
				t.Errorf("inserter: %v", err)
				return
			}
			mu.Lock()
			ids = append(ids, id)
			mu.Unlock()
		}
	}()

	time.Sleep(2 * time.Second)
	killed := time.Now()
	a.cancel() // the active instance goes away; its connections close
	waitReady(t, addrB, 30*time.Second)
	takeover := time.Since(killed)
	t.Logf("standby ready %s after the active relay was cancelled", takeover.Round(time.Millisecond))
	if takeover > 10*time.Second {
		t.Errorf("takeover took %s; want a few seconds", takeover)
	}
	time.Sleep(2 * time.Second)
	close(stop)
	<-inserted

	mu.Lock()
	want := append([]string(nil), ids...)
	mu.Unlock()
	msgs := testbed.Consume(t, topic, nil, len(want), 60*time.Second, 2*time.Second)
	seen := map[string]bool{}
	for _, m := range msgs {
		id, _ := header(m, "id")
		seen[id] = true
	}
	var missing []string
	for _, id := range want {
		if !seen[id] {
			missing = append(missing, id)
		}
	}
	t.Logf("%d events inserted around the switch, %d records read (%d duplicates), %d missing", len(want), len(msgs), len(msgs)-len(seen), len(missing))
	if len(missing) > 0 {
		t.Fatalf("%d events lost across the failover, e.g. %v", len(missing), missing[:min(5, len(missing))])
	}
	if !strings.Contains(b.log.String(), "failover lock acquired") {
		t.Errorf("the standby's log does not say it took over")
	}
}

// TestJanitorInRelay: with outbox.retention.ms set, the running relay
// publishes both rows and then deletes the one older than the retention;
// the delete is not routed.
func TestJanitorInRelay(t *testing.T) {
	admin := testbed.Admin(t)
	n := time.Now().UnixNano()
	table, slot, pub := fmt.Sprintf("janitor_relay_%d", n), fmt.Sprintf("janitor_relay_%d", n), fmt.Sprintf("janitor_relay_%d", n)
	testbed.Exec(t, admin,
		fmt.Sprintf(`CREATE TABLE public.%s (LIKE public.outbox INCLUDING ALL)`, table),
		fmt.Sprintf(`GRANT SELECT, DELETE ON public.%s TO debezium`, table),
		fmt.Sprintf(`CREATE PUBLICATION %s FOR TABLE public.%s`, pub, table),
	)
	t.Cleanup(func() {
		testbed.DropSlot(t, admin, slot)
		testbed.Exec(t, admin, `DROP PUBLICATION IF EXISTS `+pub, `DROP TABLE IF EXISTS public.`+table)
	})
	r := startRelay(t, exampleConfig(t, map[string]any{
		"slot.name": slot, "publication.name": pub, "table.include.list": "public." + table, "outbox.retention.ms": "1000",
	}))
	testbed.WaitSlotActive(t, admin, slot, 30*time.Second)
	topic := fmt.Sprintf("janitor%d", n)
	testbed.Exec(t, admin, fmt.Sprintf(`INSERT INTO public.%s (aggregate_type, aggregate_id, event_type, payload, created_at) VALUES
		('%s', 'old', 'x', '{}', now() - interval '1 hour'), ('%s', 'young', 'x', '{}', now() + interval '1 hour')`, table, topic, topic))
	if msgs := testbed.Consume(t, topic, nil, 2, 30*time.Second, time.Second); len(msgs) != 2 {
		t.Fatalf("%d records, want both rows published (and the janitor's delete not routed)", len(msgs))
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var left string
		if err := admin.QueryRow(context.Background(), `SELECT coalesce(string_agg(aggregate_id, ','), '') FROM public.`+table).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == "young" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rows left %q after 20 s; want only the young one", left)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(r.log.String(), "janitor: deleted old outbox rows") {
		t.Errorf("the relay's log does not mention the janitor's delete")
	}
}
