package replication

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
)

func baseConfig() map[string]string {
	return map[string]string{
		"database.hostname": "127.0.0.1", "database.user": "u", "database.dbname": "d",
		"topic.prefix": "p", "table.include.list": "public.outbox",
	}
}

func TestParseConfig(t *testing.T) {
	cases := []struct {
		name    string
		set     map[string]string
		wantErr string
		check   func(*testing.T, Config)
	}{
		{name: "defaults", check: func(t *testing.T, c Config) {
			if c.Port != 5432 || c.Slot != "debezium" || c.Publication != "dbz_publication" || c.SnapshotMode != SnapshotInitial ||
				c.MaxRetries != -1 || c.RetryWait != 10*time.Second || c.SlotMaxRetries != 6 || c.SlotRetryDelay != 10*time.Second ||
				c.HeartbeatTopic != "__debezium-heartbeat.p" {
				t.Errorf("defaults: %+v", c)
			}
		}},
		{name: "schema_only is no_data", set: map[string]string{"snapshot.mode": "schema_only"},
			check: func(t *testing.T, c Config) {
				if c.SnapshotMode != SnapshotNoData {
					t.Errorf("snapshot mode %s", c.SnapshotMode)
				}
			}},
		{name: "always refused", set: map[string]string{"snapshot.mode": "always"}, wantErr: "publish every outbox row again"},
		{name: "retries", set: map[string]string{"errors.max.retries": "3", "retriable.restart.connector.wait.ms": "250"},
			check: func(t *testing.T, c Config) {
				if c.MaxRetries != 3 || c.RetryWait != 250*time.Millisecond {
					t.Errorf("retries %d wait %s", c.MaxRetries, c.RetryWait)
				}
			}},
		{name: "bad port", set: map[string]string{"database.port": "x"}, wantErr: "database.port"},
		{name: "no table", set: map[string]string{"table.include.list": ""}, wantErr: "table.include.list is required"},
		{name: "bad slot", set: map[string]string{"slot.name": "Bad-Slot"}, wantErr: "slot.name"},
		{name: "bad sslmode", set: map[string]string{"database.sslmode": "sometimes"}, wantErr: "database.sslmode"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := baseConfig()
			for k, v := range c.set {
				m[k] = v
			}
			cfg, err := ParseConfig(m)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, cfg)
		})
	}
}

// TestOpenRefusedIsRetryable: a server that refuses connections (port 1)
// fails Open with an error the relay retries (errors.max.retries bounds
// it: relay.TestRunGivesUpAfterMaxRetries).
func TestOpenRefusedIsRetryable(t *testing.T) {
	m := baseConfig()
	m["database.port"] = "1"
	cfg, err := ParseConfig(m)
	if err != nil {
		t.Fatal(err)
	}
	src, err := NewSource(&cfg, SourceOptions{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = src.Open(ctx, capture.Known{})
	if err == nil || !src.Retryable(err) {
		t.Fatalf("Open against port 1: %v (retryable %v); want a retryable connection error", err, src.Retryable(err))
	}
}
