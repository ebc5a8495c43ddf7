package relay_test

import (
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/router"
)

// TestMessagesRouted: with DecodeLogicalDecodingMessageContent before the
// EventRouter, a transactional message is routed in its place among its
// transaction's rows and lost with a rollback; a non-transactional one is
// routed on its own, when the server decodes it, rolled back or not;
// prefixes outside message.prefix.include.list are skipped; and the slot
// confirms past all of it.
func TestMessagesRouted(t *testing.T) {
	f := newStreamFixture(t, map[string]string{"message.prefix.include.list": "evt"})
	f.cfg.Messages = true
	rcfg, _, err := router.ParseConfig(map[string]string{
		"transforms":                                  "decode,outbox",
		"transforms.decode.type":                      router.DecodeMessageClass,
		"transforms.outbox.type":                      router.EventRouterClass,
		"transforms.outbox.table.expand.json.payload": "true",
		"topic.prefix":                                f.name,
	})
	if err != nil {
		t.Fatal(err)
	}
	if f.rt, err = router.New(rcfg, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	sink := &holdingSink{}
	f.run(t, sink)
	msg := func(transactional bool, prefix, id string) string {
		tx := "false"
		if transactional {
			tx = "true"
		}
		return `SELECT pg_logical_emit_message(` + tx + `, '` + prefix + `', '{"id":"` + id + `","aggregatetype":"a","aggregateid":"k","payload":{"id":"` + id + `"}}')`
	}
	testbed.Exec(t, f.admin, "BEGIN",
		`INSERT INTO `+f.name+`.outbox (id, aggregatetype, aggregateid, payload) VALUES (1, 'a', 'k', '{}')`,
		msg(true, "evt", "m2"),
		msg(false, "evt", "n1"), // decoded now, published before the transaction
		msg(true, "other", "skipped"),
		`INSERT INTO `+f.name+`.outbox (id, aggregatetype, aggregateid, payload) VALUES (3, 'a', 'k', '{}')`,
		msg(true, "EVT", "m4"), // prefixes match case-insensitively, as Debezium's
		"COMMIT",
		"BEGIN", msg(true, "evt", "rolled-back"), msg(false, "evt", "n5"), "ROLLBACK",
	)
	last := f.walInsertLSN(t)
	want := []string{"n1", "1", "m2", "3", "m4", "n5"}
	waitFor(t, "the records", 20*time.Second, func() bool { return len(sink.sent()) >= len(want) })
	waitFor(t, "the slot to confirm past the messages", 20*time.Second, func() bool {
		return testbed.ConfirmedFlush(t, f.admin, f.name) >= last
	})
	if got := sink.sent(); !slices.Equal(got, want) {
		t.Fatalf("sent %q; want %q", got, want)
	}
}
