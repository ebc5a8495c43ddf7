package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
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
	out, err := runCheckCmd(t, exampleConfig(t, map[string]any{
		"slot.name": name, "publication.name": name, "table.include.list": name + `\.none`,
		"transforms": "decode,outbox", "transforms.decode.type": "io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent",
		"message.prefix.include.list": "orders",
	}))
	if err == nil {
		t.Fatal("check passed with a message the relay would stop at")
	}
	for _, line := range []string{
		"✓ logical decoding messages: PostgreSQL",
		"✓ message prefixes: routed: prefixes matching message.prefix.include.list orders",
		"✓ outbox tables: none matches table.include.list",
		"✗ pending messages: 1 routable and 1 skipped by prefix among the first 10000 changes waiting in slot " + name + "; 1 the relay would stop at",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("check output lacks %q", line)
		}
	}
}
