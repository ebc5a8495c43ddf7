package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// testKafkaPausedBigRecords: with the private broker paused (SIGSTOP), big
// records fill buffer.memory. The stream must stop reading and keep
// answering the walsender, not block inside the producer: with
// wal_sender_timeout at 2 s a silent client is cut off, so the walsender
// must be the same process before and after a 10 s pause, and the relay
// must not have reconnected. Then everything arrives.
func testKafkaPausedBigRecords(t *testing.T, b *privateBed) {
	f := b.newFixture(t, "bigpause")
	testbed.Exec(t, f.admin, `ALTER SYSTEM SET wal_sender_timeout = '2s'`, `SELECT pg_reload_conf()`)
	t.Cleanup(func() {
		conn := b.Connect(t)
		testbed.Exec(t, conn, `ALTER SYSTEM RESET wal_sender_timeout`, `SELECT pg_reload_conf()`)
	})
	cfg := b.config(t, f, map[string]string{"buffer.memory": "1048576", "max.request.size": "262144"})
	r := b.startRelay(t, cfg, logFile(t, "bigpause-relay"))
	f.waitStreaming(t)
	before := walsenderPID(t, f)

	resume := b.PauseKafka(t)
	// 4 MiB of outbox rows, 20 KiB each, one transaction per row: four
	// times buffer.memory.
	const rows, pad = 200, 20 << 10
	for i := range rows {
		testbed.Exec(t, f.admin, fmt.Sprintf(`INSERT INTO %s.outbox (aggregatetype, aggregateid, ord, payload)
			VALUES ('order', 'agg-%d', %d, jsonb_build_object('pad', repeat('x', %d)))`, f.name, i%7, i, pad))
	}
	time.Sleep(10 * time.Second)
	var during int32 // 0: no walsender streams the slot any more
	_ = f.admin.QueryRow(context.Background(), `SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1 AND active`, f.name).Scan(&during)
	resume()

	deadline := time.Now().Add(60 * time.Second)
	for {
		rep, _, _ := b.verifyOutbox(t, f)
		if len(rep.Missing) == 0 && rep.Events == rows {
			requireComplete(t, "Kafka paused, big records", rep)
			break
		}
		if time.Now().After(deadline) {
			requireComplete(t, "Kafka paused, big records (60 s after resuming)", rep)
			break
		}
		time.Sleep(time.Second)
	}
	reconnects := grepLines(r.log(), "session failed, retrying")
	if before == 0 || during != before || len(reconnects) != 0 {
		t.Errorf("the relay's walsender was pid %d before the pause and %d after 10 s of it (reconnect lines: %q); want the same walsender, never cut off for silence",
			before, during, reconnects)
	}
	t.Logf("Kafka paused 10 s with %d rows of %d KiB (4× buffer.memory) waiting: walsender pid %d throughout, no reconnect", rows, pad>>10, before)
}
