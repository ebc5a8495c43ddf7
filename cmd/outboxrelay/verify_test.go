package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// TestVerify: after the relay published a test's rows, verify finds
// nothing missing; a row that existed before the slot (never sent, with
// snapshot.mode=no_data) is reported missing by its event id.
func TestVerify(t *testing.T) {
	admin := testbed.Admin(t)
	prepareExample(t, admin)
	aggType := fmt.Sprintf("verify%d", time.Now().UnixNano())
	before := insertExample(t, admin, aggType, "agg-0", "e", `{"n":0}`)
	slot := fmt.Sprintf("verify_%d", time.Now().UnixNano())
	t.Cleanup(func() { testbed.DropSlot(t, admin, slot) })
	config := exampleConfig(t, map[string]any{"slot.name": slot})
	r := startRelay(t, config)
	testbed.WaitSlotActive(t, admin, slot, 30*time.Second)
	for i := 1; i <= 30; i++ {
		insertExample(t, admin, aggType, fmt.Sprintf("agg-%d", i%4), "e", fmt.Sprintf(`{"n":%d}`, i))
	}
	testbed.Consume(t, aggType, nil, 30, 30*time.Second, 500*time.Millisecond)
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}

	verifyRun := func(where string) (string, error) {
		var out, errs bytes.Buffer
		err := run(context.Background(), []string{"verify", "--config", config, "--kafka-brokers", testbed.KafkaBrokers(t),
			"--order-by", "(extract(epoch FROM created_at) * 1000000)::bigint", "--where", where}, &out, &errs)
		return out.String() + errs.String(), err
	}
	out, err := verifyRun(fmt.Sprintf("aggregate_type = '%s' AND message_id <> '%s'", aggType, before))
	if err != nil || !strings.Contains(out, "events 30, deliveries 30, missing 0, duplicated 0") {
		t.Fatalf("verify of delivered rows: %v\n%s", err, out)
	}
	out, err = verifyRun(fmt.Sprintf("aggregate_type = '%s'", aggType))
	if err == nil || !strings.Contains(out, "missing 1") || !strings.Contains(out, before) {
		t.Fatalf("verify with a never-sent row: %v\n%s; want missing 1 naming %s", err, out, before)
	}
	t.Logf("verify output:\n%s", out)
}

// TestVerifyShadowFlags: flags that would be silently ignored are refused,
// naming what to do.
func TestVerifyShadowFlags(t *testing.T) {
	config := exampleConfig(t, map[string]any{"slot.name": "unused"})
	for _, tc := range []struct{ args, want string }{
		{"--topics a,b", "add --shadow"},
		{"--shadow --order-by 1", "do not apply"},
		{"--shadow --emitted x", "do not apply"},
		{"--shadow --topics a --where x=1", "leave one out"},
	} {
		var out, errs bytes.Buffer
		args := append([]string{"verify", "--config", config}, strings.Fields(tc.args)...)
		err := run(context.Background(), args, &out, &errs)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("verify %s: %v; want a usage error saying %q", tc.args, err, tc.want)
		}
	}
}
