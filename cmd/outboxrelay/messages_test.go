package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/outbox"
)

// TestCheckMessages: for an outbox without a table, check reports the
// server's support for messages, the prefix list, and what waits in the
// idle slot: routable messages, others skipped by prefix, and the one the
// relay would stop at.
func TestCheckMessages(t *testing.T) {
	admin := testbed.Admin(t)
	name := fmt.Sprintf("chkmsg_%d", time.Now().UnixNano()%1e9)
	testbed.Exec(t, admin, `CREATE PUBLICATION `+name,
		`SELECT pg_create_logical_replication_slot('`+name+`', 'pgoutput')`,
		`SELECT pg_logical_emit_message(true, 'orders', '{"message_id":"m-1","aggregate_type":"orders","aggregate_id":"k","event_type":"e","payload":{"v":1}}')`,
		`SELECT pg_logical_emit_message(true, 'other', 'not for us')`,
		`SELECT pg_logical_emit_message(true, 'ORDERS', 'not json')`,
	)
	t.Cleanup(func() {
		testbed.DropSlot(t, admin, name)
		testbed.Exec(t, admin, `DROP PUBLICATION IF EXISTS `+name)
	})
	overrides := map[string]any{
		"slot.name": name, "publication.name": name, "table.include.list": name + `\.none`,
		"transforms": "decode,outbox", "transforms.decode.type": "io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent",
		"message.prefix.include.list": "orders",
	}
	overrides["outbox.messages.only"] = "true"
	out, err := runCheckCmd(t, exampleConfig(t, overrides))
	if err == nil {
		t.Fatal("check passed with a message the relay would stop at")
	}
	for _, line := range []string{
		"✓ logical decoding messages: PostgreSQL",
		"✓ message prefixes: routed: prefixes matching message.prefix.include.list orders",
		"✓ outbox tables: none matches table.include.list",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("check output lacks %q", line)
		}
	}
	// Messages are database-wide: other tests running at the same time add
	// to the ones skipped by prefix (this test's own "other" is one).
	pending := regexp.MustCompile(`✗ pending messages: 1 routable and [1-9][0-9]* skipped by prefix among the first [1-9][0-9]* changes waiting in slot ` + name + `; 1 the relay would stop at`)
	if !pending.MatchString(out) {
		t.Errorf("check output lacks %s", pending)
	}
	// Regression: review-16 finding 8. With errors.tolerance=all the relay
	// skips or dead-letters the message, yet check failed on it.
	overrides["errors.tolerance"] = "all"
	if out, err = runCheckCmd(t, exampleConfig(t, overrides)); err != nil || !strings.Contains(out, "1 the relay will skip or dead-letter (errors.tolerance=all)") {
		t.Errorf("check with errors.tolerance=all: err %v, want the pending message named and the check passed", err)
	}
	delete(overrides, "errors.tolerance")
	// Regression: review-16 finding 5. With messages on, a
	// table.include.list matching nothing passed check (and started the
	// relay), so a typo in a mixed connector routed no row: messages only
	// must now be said with outbox.messages.only.
	delete(overrides, "outbox.messages.only")
	out, err = runCheckCmd(t, exampleConfig(t, overrides))
	if err == nil || !strings.Contains(out, "✗ outbox tables: none matches table.include.list") || !strings.Contains(out, "outbox.messages.only=true") {
		t.Errorf("check without outbox.messages.only: err %v, want ✗ outbox tables naming the key", err)
	}
}

// TestVerifyEmitted: events emitted with outbox.Emitter (no table) are
// relayed, and verify --emitted checks them against a list of the emitted
// ids: nothing missing, and an id that was never emitted is reported
// missing.
func TestVerifyEmitted(t *testing.T) {
	admin := testbed.Admin(t)
	prepareExample(t, admin)
	stamp := time.Now().UnixNano() % 1e9
	aggType, slot, prefix := fmt.Sprintf("emitted%d", stamp), fmt.Sprintf("emitted_%d", stamp), fmt.Sprintf("svc%d", stamp)
	t.Cleanup(func() { testbed.DropSlot(t, admin, slot) })
	config := exampleConfig(t, map[string]any{"slot.name": slot,
		"transforms": "decode,outbox", "transforms.decode.type": "io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent",
		"message.prefix.include.list": prefix, "table.include.list": `public\.no_such_table`, "outbox.messages.only": "true"})
	opts, err := outbox.LoadOptions(config)
	if err != nil {
		t.Fatal(err)
	}
	e, err := outbox.NewEmitter(opts)
	if err != nil || e.Prefix() != prefix {
		t.Fatalf("emitter prefix %q (err %v), want %q from message.prefix.include.list", e.Prefix(), err, prefix)
	}
	r := startRelay(t, config)
	testbed.WaitSlotActive(t, admin, slot, 30*time.Second)
	var list strings.Builder
	ctx := context.Background()
	for i := range 10 {
		evs := []outbox.Event{{AggregateType: aggType, AggregateID: fmt.Sprintf("agg-%d", i%3), Payload: map[string]int{"n": i},
			Columns: map[string]any{"event_type": "Emitted"}}}
		if err := pgx.BeginFunc(ctx, admin, func(tx pgx.Tx) error { return e.Emit(ctx, tx, evs...) }); err != nil {
			t.Fatal(err)
		}
		// Emit filled in the id: the application logs what it committed.
		fmt.Fprintf(&list, "%s\t%s\t%s\n", evs[0].ID, evs[0].AggregateType, evs[0].AggregateID)
	}
	testbed.Consume(t, aggType, nil, 10, 30*time.Second, 500*time.Millisecond)
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	verifyRun := func(list string, flags ...string) (string, error) {
		args := []string{"verify", "--config", config, "--kafka-brokers", testbed.KafkaBrokers(t)}
		if list != "" {
			file := filepath.Join(t.TempDir(), "emitted.tsv")
			if err := os.WriteFile(file, []byte(list), 0o644); err != nil {
				t.Fatal(err)
			}
			args = append(args, "--emitted", file)
		}
		var out, errs bytes.Buffer
		err := run(ctx, append(args, flags...), &out, &errs)
		return out.String() + errs.String(), err
	}
	// Regression: review-16 finding 4. Without --emitted, a messages-only
	// config passed verify with nothing checked; --where was ignored.
	if out, err := verifyRun(""); err == nil || !strings.Contains(err.Error()+out, "pass --emitted") {
		t.Errorf("verify of a messages-only config without --emitted: %v\n%s", err, out)
	}
	if out, err := verifyRun(list.String(), "--where", "true"); err == nil || !strings.Contains(err.Error()+out, "with --emitted") {
		t.Errorf("verify --emitted --where: %v\n%s", err, out)
	}
	out, err := verifyRun(list.String())
	if err != nil || !strings.Contains(out, "events 10, deliveries 10, missing 0, duplicated 0") {
		t.Fatalf("verify --emitted: %v\n%s", err, out)
	}
	out, err = verifyRun(list.String() + "never-emitted\t" + aggType + "\tagg-0\n")
	if err == nil || !strings.Contains(out, "missing 1") || !strings.Contains(out, "never-emitted") {
		t.Fatalf("verify --emitted with an id never emitted: %v\n%s", err, out)
	}
	t.Logf("verify output:\n%s", out)
}
