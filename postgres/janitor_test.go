package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestJanitorClean pins a round's loop, which both capture sources' rules
// run through: each table is cleaned batch by batch until a batch deletes
// fewer rows than the batch size; Deleted hears every batch; an error
// ends the round with what was deleted before it.
func TestJanitorClean(t *testing.T) {
	var calls []string
	var told int64
	j := &Janitor{Cfg: JanitorConfig{Batch: 2, Pause: time.Millisecond}, Deleted: func(n int64) { told += n }}
	left := map[string]int64{"public.a": 5, "public.b": 1}
	batch := func(table string) (int64, error) {
		calls = append(calls, table)
		n := min(left[table], 2)
		left[table] -= n
		return n, nil
	}
	total, err := j.clean(context.Background(), []string{"public.a", "public.b"}, batch)
	if err != nil || total != 6 || told != 6 {
		t.Fatalf("clean: total %d, told %d, err %v; want 6 rows", total, told, err)
	}
	if got := strings.Join(calls, " "); got != "public.a public.a public.a public.b" {
		t.Errorf("batches %q; want three of public.a (2, 2, 1) and one of public.b", got)
	}

	failed := errors.New("serialization failure")
	total, err = j.clean(context.Background(), []string{"public.a", "public.b"}, func(table string) (int64, error) {
		if table == "public.b" {
			return 0, failed
		}
		return 1, nil
	})
	if !errors.Is(err, failed) || total != 1 {
		t.Errorf("a failing batch: total %d, err %v; want 1 and the batch's error", total, err)
	}
}

func TestJanitorInterval(t *testing.T) {
	for retention, want := range map[time.Duration]time.Duration{
		time.Second: time.Second, 10 * time.Second: 5 * time.Second, time.Hour: time.Minute,
	} {
		if got := (JanitorConfig{Retention: retention}).Interval(); got != want {
			t.Errorf("retention %s: interval %s, want %s", retention, got, want)
		}
	}
	if _, err := ParseJanitorConfig(map[string]string{KeyRetention: "-1"}); err == nil || !strings.Contains(err.Error(), KeyRetention) {
		t.Errorf("negative retention: %v", err)
	}
	c, err := ParseJanitorConfig(map[string]string{KeyRetention: "604800000", KeyRetentionColumn: "inserted_at"})
	if err != nil || c.Retention != 7*24*time.Hour || c.Column != "inserted_at" || c.Batch != 1000 {
		t.Errorf("ParseJanitorConfig: %+v, %v", c, err)
	}
}
