package deploytest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// exampleConfig writes make demo's connector JSON (testdata/connector.json)
// for the PostgreSQL at host:port, with overrides applied, into dir, world-
// readable: the image's user (uid 65532) reads it through a bind mount.
func exampleConfig(t *testing.T, dir, host string, port int, overrides map[string]string) string {
	t.Helper()
	all := map[string]any{"database.hostname": host, "database.port": strconv.Itoa(port)}
	for k, v := range overrides {
		all[k] = v
	}
	return testbed.ConnectorFile(t, dir, filepath.Join("..", "..", "testdata", "connector.json"), all)
}

// prepareExample creates make demo's outbox table, role and publication
// from sql/ where missing.
func prepareExample(t *testing.T, admin *pgx.Conn) {
	t.Helper()
	for _, f := range []string{"outbox.sql", "role.sql"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "sql", f))
		if err != nil {
			t.Fatal(err)
		}
		testbed.Exec(t, admin, string(b))
	}
	testbed.Exec(t, admin, `DO $$BEGIN
		IF NOT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = 'order_db_outbox') THEN
			CREATE PUBLICATION order_db_outbox FOR TABLE public.outbox;
		END IF; END$$`)
}

// insertExample inserts one outbox row in its own transaction and returns
// its message_id.
func insertExample(t *testing.T, admin *pgx.Conn, aggType, aggID, evType, payload string) string {
	t.Helper()
	var id string
	err := admin.QueryRow(context.Background(),
		`INSERT INTO public.outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ($1, $2, $3, $4) RETURNING message_id::text`,
		aggType, aggID, evType, payload).Scan(&id)
	if err != nil {
		t.Fatalf("inserting the %s event: %v", aggType, err)
	}
	return id
}

// exampleEvent is one of make demo's events as its consumer reads it.
type exampleEvent struct {
	topic, id, key, eventType, value string
}

// checkExample reads the topic's records after from and wants exactly the
// event: headers id then eventType, the key, the value byte for byte.
func checkExample(t *testing.T, from map[int]int64, want exampleEvent) {
	t.Helper()
	msgs := testbed.Consume(t, want.topic, from, 1, 30*time.Second, time.Second)
	if len(msgs) != 1 {
		t.Fatalf("topic %s: %d records, want exactly 1", want.topic, len(msgs))
	}
	m := msgs[0]
	got := exampleEvent{topic: m.Topic, key: string(m.Key), value: string(m.Value)}
	if len(m.Headers) == 2 && m.Headers[0].Key == "id" && m.Headers[1].Key == "eventType" {
		got.id, got.eventType = string(m.Headers[0].Value), string(m.Headers[1].Value)
	} else {
		t.Errorf("topic %s: headers %v, want id then eventType", want.topic, headerKeys(m))
	}
	if got != want {
		t.Errorf("topic %s: got %+v\nwant %+v", want.topic, got, want)
	}
}

func headerKeys(m kafka.Message) []string {
	keys := make([]string, len(m.Headers))
	for i, h := range m.Headers {
		keys[i] = h.Key
	}
	return keys
}
