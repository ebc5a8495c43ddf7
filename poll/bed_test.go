package poll

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/postgres"
)

// TestWatchdogCountsStuckRows: the watchdog counts the rows undispatched
// for longer than outbox.poll.stuck.after.ms, on the insert-time column
// when the order column is not a timestamp, and names the lowest event id.
func TestWatchdogCountsStuckRows(t *testing.T) {
	admin := testbed.Admin(t)
	schema := fmt.Sprintf("poll_watch_%d", time.Now().UnixNano()%1e12)
	testbed.Exec(t, admin,
		`CREATE SCHEMA `+schema,
		`CREATE TABLE `+schema+`.outbox (id bigserial PRIMARY KEY, aggregateid text NOT NULL, payload jsonb, created_at timestamptz NOT NULL DEFAULT now(), dispatched_at timestamptz)`,
		`GRANT USAGE ON SCHEMA `+schema+` TO debezium`,
		`GRANT SELECT, UPDATE ON `+schema+`.outbox TO debezium`,
		`INSERT INTO `+schema+`.outbox (aggregateid, created_at) VALUES ('a', now() - interval '1 hour'), ('b', now() - interval '2 hours'), ('c', now())`,
		`INSERT INTO `+schema+`.outbox (aggregateid, created_at, dispatched_at) VALUES ('d', now() - interval '3 hours', now())`)
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`) })
	host, port := testbed.PostgresHostPort(t)
	pg, err := postgres.ParseConfig(map[string]string{
		"database.hostname": host, "database.port": fmt.Sprint(port), "database.user": "debezium", "database.password": "debezium@123",
		"database.dbname": "order_db", "database.sslmode": "disable", "table.include.list": schema + `\.outbox`,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig(map[string]string{KeyMode: "poll", KeyStuckAfter: "60000"}, "id", "aggregateid", "created_at")
	if err != nil {
		t.Fatal(err)
	}
	var logs testbed.SyncBuffer
	var stuck int64 = -1
	src, err := NewSource(&pg, cfg, SourceOptions{Log: slog.New(slog.NewTextHandler(&logs, nil)), Stuck: func(n int64) { stuck = n }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := src.Open(ctx, capture.Known{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx, capture.Ending{Orderly: true, Complete: true})
	if err := st.(*stream).watch(ctx); err != nil {
		t.Fatal(err)
	}
	if stuck != 2 || !strings.Contains(logs.String(), "lowest_event_id=1") {
		t.Fatalf("stuck %d; want 2 (the two old undispatched rows), the warning naming id 1; log:\n%s", stuck, logs.String())
	}
}
