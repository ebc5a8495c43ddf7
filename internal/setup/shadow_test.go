package setup

import (
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/outboxrelay/outboxrelay/internal/config"
)

// TestShadow: a shadow run beside the live connector of the same file
// writes nothing the connector owns: not its slot, not its offsets record
// (even when the file names Connect's offsets topic), not its topics, not
// the database; poll mode is refused.
func TestShadow(t *testing.T) {
	base := `{"name":"orders","database.hostname":"h","database.user":"u","database.dbname":"d","topic.prefix":"p","plugin.name":"pgoutput","bootstrap.servers":"k:9092",
		"connector.class":"io.debezium.connector.postgresql.PostgresConnector","table.include.list":"public.outbox","slot.name":"outbox_slot","slot.drop.on.stop":"true",
		"offsets.storage.topic":"connect-offsets","heartbeat.interval.ms":"1000","heartbeat.action.query":"UPDATE heartbeat SET at = now()",
		"outbox.retention.ms":"60000","errors.tolerance":"all","errors.deadletterqueue.topic.name":"dlq","exactly.once.support":"required",
		"transforms":"outbox","transforms.outbox.type":"io.debezium.transforms.outbox.EventRouter","transforms.outbox.route.topic.replacement":"${routedByValue}.events"`
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	parse := func(extra string) *Setup {
		cfg, err := config.Parse([]byte(base+extra+"}"), "test.json", os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		set, err := Parse(cfg, log)
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	set := parse("")
	changes, err := set.Shadow("shadow.", log)
	if err != nil {
		t.Fatal(err)
	}
	topic, err := set.Router.Topic([]byte("order"))
	if err != nil {
		t.Fatal(err)
	}
	for what, got := range map[string][2]string{
		"slot":             {set.Postgres.Slot, "outbox_slot_shadow"},
		"offsets topic":    {set.Offsets.Topic, ShadowOffsetsTopic},
		"routed topic":     {topic, "shadow.order.events"},
		"heartbeat topic":  {set.Postgres.HeartbeatTopic, "shadow.__debezium-heartbeat.p"},
		"dead-letter":      {set.Kafka.DeadLetterTopic, "shadow.dlq"},
		"transactional.id": {set.ExactlyOnce.TransactionalID, "orders_shadow"},
		"heartbeat query":  {set.Postgres.HeartbeatQuery, ""},
	} {
		if got[0] != got[1] {
			t.Errorf("%s = %q, want %q", what, got[0], got[1])
		}
	}
	if set.Janitor.Retention != 0 || set.Postgres.DropSlotOnStop {
		t.Errorf("janitor retention %s, slot.drop.on.stop %v: want the janitor off and the slot kept", set.Janitor.Retention, set.Postgres.DropSlotOnStop)
	}
	if len(changes) < 8 || !strings.Contains(strings.Join(changes, "; "), `offsets.storage.topic "connect-offsets"`) {
		t.Errorf("changes %q: want each override named", changes)
	}

	poll := parse(`,"outbox.capture.mode":"poll","exactly.once.support":"requested"`)
	if _, err := poll.Shadow("shadow.", log); err == nil || !strings.Contains(err.Error(), "poll mode marks every row") {
		t.Errorf("poll mode: err = %v, want it refused", err)
	}
	long := parse(`,"slot.name":"` + strings.Repeat("s", 60) + `"`)
	if _, err := long.Shadow("shadow.", log); err == nil || !strings.Contains(err.Error(), "slot.name") {
		t.Errorf("a 67-character shadow slot: err = %v, want a refusal naming slot.name", err)
	}
	if _, err := parse("").Shadow("a$b", log); err == nil {
		t.Error("a prefix with $ (a replacement group) was accepted")
	}
}
