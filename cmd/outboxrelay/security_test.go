package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

const pgPassword = "debezium@123" // the example config's database.password

// waitExit waits for the relay to stop by itself and returns its error.
func (r *relayProc) waitExit(t *testing.T, within time.Duration) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err
		return err
	case <-time.After(within):
		t.Fatalf("relay still running after %s; want it to stop with an error", within)
		return nil
	}
}

// noSecrets fails when a password shows in the relay's log or error.
func noSecrets(t *testing.T, r *relayProc, err error, secrets ...string) {
	t.Helper()
	text := r.log.String()
	if err != nil {
		text += "\n" + err.Error()
	}
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Errorf("a password (%d characters) appears in the relay's log or error:\n%s", len(s), text)
		}
	}
}

// roundTrip inserts one event and waits for it on its topic.
func roundTrip(t *testing.T, slot string) {
	t.Helper()
	admin := testbed.Admin(t)
	testbed.WaitSlotActive(t, admin, slot, 30*time.Second)
	topic := fmt.Sprintf("sec%d", time.Now().UnixNano())
	id := insertExample(t, admin, topic, "k", "e", `{"a":1}`)
	msgs := testbed.Consume(t, topic, nil, 1, 30*time.Second, 200*time.Millisecond)
	if got, _ := header(msgs[0], "id"); got != id {
		t.Fatalf("got event %s, want %s", got, id)
	}
}

func securitySetup(t *testing.T, overrides map[string]any) (slot, config string) {
	t.Helper()
	admin := testbed.Admin(t)
	prepareExample(t, admin)
	slot = fmt.Sprintf("sec_%d", time.Now().UnixNano())
	t.Cleanup(func() { testbed.DropSlot(t, admin, slot) })
	overrides["slot.name"] = slot
	return slot, exampleConfig(t, overrides)
}

// TestPostgresTLSVerifyFull: database.sslmode=verify-full against the bed's
// CA streams; the same with an unrelated CA stops with a clear error
// instead of retrying forever.
func TestPostgresTLSVerifyFull(t *testing.T) {
	ca, wrongCA := testbed.PostgresTLS(t)
	t.Run("right CA", func(t *testing.T) {
		slot, config := securitySetup(t, map[string]any{"database.sslmode": "verify-full", "database.sslrootcert": ca})
		r := startRelay(t, config)
		roundTrip(t, slot)
		noSecrets(t, r, r.stop(t), pgPassword)
	})
	t.Run("wrong CA", func(t *testing.T) {
		_, config := securitySetup(t, map[string]any{"database.sslmode": "verify-full", "database.sslrootcert": wrongCA})
		r := startRelay(t, config)
		err := r.waitExit(t, 30*time.Second)
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("relay stopped with %v; want a certificate verification error", err)
		}
		t.Logf("wrong CA: %v", err)
		noSecrets(t, r, err, pgPassword)
	})
}

// TestKafkaSASLSCRAM: Kafka over SASL/SCRAM-SHA-512 with the password from
// sasl.jaas.config works; a wrong password stops the relay with an error
// naming the keys to fix, and neither password is ever printed.
func TestKafkaSASLSCRAM(t *testing.T) {
	brokers, user, password := testbed.KafkaSASL(t)
	jaas := func(pw string) string {
		return fmt.Sprintf(`org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";`, user, pw)
	}
	sasl := func(pw string) map[string]any {
		return map[string]any{
			"security.protocol": "SASL_PLAINTEXT",
			"sasl.mechanism":    "SCRAM-SHA-512",
			"sasl.jaas.config":  jaas(pw),
		}
	}
	t.Run("right password", func(t *testing.T) {
		slot, config := securitySetup(t, sasl(password))
		r := startRelayWith(t, config, brokers)
		roundTrip(t, slot)
		noSecrets(t, r, r.stop(t), pgPassword, password)
	})
	t.Run("wrong password", func(t *testing.T) {
		const wrong = "not-the-password-42"
		// The relay reads its recorded position from Kafka before it
		// opens the slot, so the wrong password stops it there, before
		// any slot exists.
		slot, config := securitySetup(t, sasl(wrong))
		r := startRelayWith(t, config, brokers)
		err := r.waitExit(t, 60*time.Second)
		var slots int
		if qerr := testbed.Admin(t).QueryRow(context.Background(), `SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&slots); qerr != nil || slots != 0 {
			t.Errorf("slot %s: %d (%v); want none created before Kafka accepted the credentials", slot, slots, qerr)
		}
		if err == nil || !strings.Contains(err.Error(), "sasl") {
			t.Fatalf("relay stopped with %v; want an authentication error naming the sasl.* keys", err)
		}
		t.Logf("wrong password: %v", err)
		noSecrets(t, r, err, pgPassword, wrong, password)
	})
}
