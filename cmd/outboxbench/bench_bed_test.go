package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// TestTxSQLMatchesEventAt: the numbers the SQL computes are the ones the
// consumer checks against (EventAt), for full and partial transactions.
func TestTxSQLMatchesEventAt(t *testing.T) {
	admin := testbed.Admin(t)
	ctx := context.Background()
	tbl := fmt.Sprintf("obt_sql_%d", time.Now().UnixNano())
	testbed.Exec(t, admin, `CREATE TABLE `+tbl+` (message_id uuid PRIMARY KEY DEFAULT gen_random_uuid(), aggregate_type text, aggregate_id text, event_type text, payload jsonb)`)
	t.Cleanup(func() { testbed.Exec(t, admin, `DROP TABLE IF EXISTS `+tbl) })
	w := Workload{Run: "r", Events: 47, RowsPerTx: 5, Workers: 3, Aggregates: 7, Types: []string{"x", "y", "z"}, EventType: "E", PadBytes: 3}
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	for tx := range w.Txs() {
		testbed.Exec(t, admin, w.TxSQL(tbl, tx))
	}
	rows, err := admin.Query(ctx, `SELECT aggregate_type, aggregate_id, event_type, payload::text FROM `+tbl)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var typ, id, ev, payload string
		if err := rows.Scan(&typ, &id, &ev, &payload); err != nil {
			t.Fatal(err)
		}
		r := parseRecord([]byte(payload), "r")
		want := w.EventAt(r.Seq)
		if r.Foreign || r.Event != want || typ != w.TypeOf(want.Agg) || id != "agg-"+strconv.FormatInt(want.Agg, 10) || ev != "E" || !strings.Contains(payload, `"pad": "xxx"`) {
			t.Errorf("row %s %s %s %s: parsed %+v, want %+v", typ, id, ev, payload, r, want)
		}
		if age := time.Now().UnixMicro() - r.InsertedUs; age < 0 || age > 60e6 {
			t.Errorf("ts %d is not clock_timestamp() in µs (age %d µs)", r.InsertedUs, age)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 47 {
		t.Fatalf("%d rows, want 47", n)
	}
}

// TestBacklogWithRelay runs the benchmark as a user would: a 2,000-event
// backlog on a private table, publication, slot and topic prefix, with
// pg_recvlogical on a second slot, then the real outboxrelay binary started
// by --relay-cmd. Nothing may be missing or duplicated and stdout must be
// the JSON summary.
func TestBacklogWithRelay(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("rusage figures are read as Linux reports them")
	}
	pgURL, brokers := testbed.Postgres(t), testbed.KafkaBrokers(t)
	admin := testbed.Admin(t)
	host, port := testbed.PostgresHostPort(t)
	id := strconv.FormatInt(time.Now().UnixNano(), 36)
	table, pub, slot, recv, prefix := "obt_"+id, "obt_pub_"+id, "obt_slot_"+id, "obt_recv_"+id, "obt-"+id+"."
	t.Cleanup(func() {
		testbed.DropSlot(t, admin, slot)
		testbed.DropSlot(t, admin, recv)
		testbed.Exec(t, admin, `DROP PUBLICATION IF EXISTS `+pub, `DROP TABLE IF EXISTS `+table)
	})

	dir := t.TempDir()
	bin := filepath.Join(dir, "outboxrelay")
	build := exec.Command("go", "build", "-o", bin, "../outboxrelay")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building outboxrelay: %v\n%s", err, out)
	}
	cfg := map[string]any{
		"name": "outboxbench-test",
		"config": map[string]any{
			"connector.class":   "io.debezium.connector.postgresql.PostgresConnector",
			"database.hostname": host, "database.port": strconv.Itoa(port),
			"database.user": "debezium", "database.password": "debezium@123", "database.dbname": "order_db",
			"plugin.name": "pgoutput", "publication.name": pub, "publication.autocreate.mode": "disabled",
			"slot.name": slot, "table.include.list": "public." + table, "snapshot.mode": "no_data",
			"topic.prefix": "order_db", "offsets.storage.topic": "offsets." + slot,
			"topic.creation.default.replication.factor": "1", "topic.creation.default.partitions": "1",
			"transforms": "outbox", "transforms.outbox.type": "io.debezium.transforms.outbox.EventRouter",
			"transforms.outbox.table.field.event.id": "message_id", "transforms.outbox.table.field.event.key": "aggregate_id",
			"transforms.outbox.table.field.event.payload": "payload", "transforms.outbox.table.expand.json.payload": true,
			"transforms.outbox.route.by.field": "aggregate_type", "transforms.outbox.route.topic.replacement": prefix + "${routedByValue}",
		},
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "connector.json")
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	relayLog := filepath.Join(dir, "relay.log")
	var stdout, stderr bytes.Buffer
	err = run(ctx, []string{"backlog",
		"--pg-url", pgURL, "--kafka-brokers", brokers,
		"--events", "2000", "--rows-per-tx", "1", "--aggregates", "20",
		"--table", "public." + table, "--publication", pub, "--create", "--grant-to", "debezium",
		"--slot", slot, "--recvlogical-slot", recv,
		"--topic-prefix", prefix, "--aggregate-types", "orders,payments",
		"--relay-cmd", bin + " run --config " + cfgPath + " --kafka-brokers " + brokers + " --log-format text",
		"--relay-log", relayLog, "--timeout", "60s", "--quiet", "500ms", "--progress", "1s",
	}, &stdout, &stderr)
	if err != nil {
		logBytes, _ := os.ReadFile(relayLog)
		t.Fatalf("outboxbench: %v\nstderr:\n%s\nrelay log:\n%s", err, stderr.String(), logBytes)
	}
	var s Summary
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		t.Fatalf("stdout is not the JSON summary: %v\n%s", err, stdout.String())
	}
	t.Logf("summary: %s", stdout.String())
	if s.Events != 2000 || s.Missing != 0 || s.Duplicates != 0 || s.OutOfOrder != 0 || s.Received != 2000 {
		t.Errorf("events %d received %d missing %d duplicates %d out_of_order %d", s.Events, s.Received, s.Missing, s.Duplicates, s.OutOfOrder)
	}
	if s.ConfirmSeconds == nil || s.ThroughputEPS <= 0 || s.FirstEventSeconds <= 0 || s.DrainFrom != "relay_start" {
		t.Errorf("confirm %v throughput %v first event %v drain from %q", s.ConfirmSeconds, s.ThroughputEPS, s.FirstEventSeconds, s.DrainFrom)
	}
	if s.PeakRSSMiB <= 0 || s.CPUSeconds <= 0 || s.RelayExitCode == nil || *s.RelayExitCode != 0 {
		t.Errorf("relay usage: rss %v MiB cpu %v s exit %v", s.PeakRSSMiB, s.CPUSeconds, s.RelayExitCode)
	}
	if s.Recvlogical == nil || s.Recvlogical.ThroughputEPS <= 0 || s.RelayVsRecvlogical <= 0 {
		t.Errorf("pg_recvlogical: %+v ratio %v", s.Recvlogical, s.RelayVsRecvlogical)
	}
}
