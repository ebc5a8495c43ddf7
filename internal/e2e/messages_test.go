package e2e_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/outboxrelay/outboxrelay/router"
)

// EnvMessagesCrash runs TestMessagesCrashLoop with that many SIGKILLs
// (make soak-messages sets 20).
const EnvMessagesCrash = "OUTBOXRELAY_MESSAGES_CRASH"

// TestMessagesCrashLoop is the crash loop of TestFaults with the events
// written as logical decoding messages: each transaction of the load
// inserts its rows into the fixture's outbox table, which is not in
// table.include.list and serves only as the ledger verify reads, and emits
// one transactional pg_logical_emit_message per row, in the rows' order.
// The relay routes the messages (DecodeLogicalDecodingMessageContent,
// then the EventRouter) and is SIGKILLed at random moments under 1,000
// messages/s: nothing may go missing, first deliveries keep commit order
// per aggregate, and nothing confirmed before a kill is sent again.
func TestMessagesCrashLoop(t *testing.T) {
	v := os.Getenv(EnvMessagesCrash)
	if v == "" {
		t.Skipf("skipping: set %s=20 (make soak-messages) to run the crash loop with messages", EnvMessagesCrash)
	}
	kills, err := strconv.Atoi(v)
	if err != nil || kills < 1 {
		t.Fatalf("%s=%q: want a number of SIGKILLs", EnvMessagesCrash, v)
	}
	rate := 1000
	if s := os.Getenv("OUTBOXRELAY_FAULT_RATE"); s != "" {
		rate = faultRate(t)
	}
	b := startPrivateBed(t)
	testCrashLoopOf(t, b, kills, crashLoad{
		extra: func(f *fixture) map[string]string {
			return map[string]string{
				// Messages only: no table of the database matches.
				"table.include.list":          f.name + `\.no_such_table`,
				"outbox.messages.only":        "true",
				"transforms":                  "decode,outbox",
				"transforms.decode.type":      router.DecodeMessageClass,
				"message.prefix.include.list": f.name,
			}
		},
		insert: func(f *fixture) string {
			return fmt.Sprintf(`WITH ins AS (%s RETURNING id, aggregatetype, aggregateid, ord, payload)
				SELECT count(pg_logical_emit_message(true, '%s', json_build_object('id', id, 'aggregatetype', aggregatetype, 'aggregateid', aggregateid, 'payload', payload)::text))
				FROM (SELECT * FROM ins ORDER BY ord) m`, faultInsert(f), f.name)
		},
		rate: rate,
	})
}
