package poll

import (
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/postgres"
)

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    map[string]string
		want Config
		err  string
	}{
		{name: "defaults", m: nil, want: Config{Mode: ModeLogical, Interval: 500 * time.Millisecond, Batch: 100, Dispatched: "dispatched_at", Order: "id", StuckAfter: 300 * time.Second}},
		{name: "poll", m: map[string]string{KeyMode: "POLL", KeyInterval: "50", KeyBatch: "500", KeyDispatched: "sent_at", KeyOrder: "seq", KeyStuckAfter: "0"},
			want: Config{Mode: ModePoll, Interval: 50 * time.Millisecond, Batch: 500, Dispatched: "sent_at", Order: "seq"}},
		{name: "bad mode", m: map[string]string{KeyMode: "cdc"}, err: "outbox.capture.mode \"cdc\": is not supported; write logical"},
		{name: "bad batch", m: map[string]string{KeyBatch: "0"}, err: "outbox.poll.batch.size \"0\": is out of range; write a number of rows from 1 to 10000"},
		{name: "bad interval", m: map[string]string{KeyInterval: "0"}, err: "outbox.poll.interval.ms \"0\": is out of range; write a number of milliseconds from 1 to 9223372036854"},
		{name: "bad stuck", m: map[string]string{KeyStuckAfter: "soon"}, err: "outbox.poll.stuck.after.ms \"soon\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig(tc.m, "id", "aggregateid", "created_at")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v; want it to contain %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.want.IDColumn, tc.want.KeyColumn, tc.want.AgeColumn = "id", "aggregateid", "created_at"
			if got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestCheckColumns(t *testing.T) {
	cfg := Config{Dispatched: "dispatched_at", Order: "seq", IDColumn: "id", KeyColumn: "aggregateid", AgeColumn: "created_at"}
	good := map[string]postgres.Column{
		"id": {Type: "uuid", NotNull: true}, "aggregateid": {Type: "text"}, "seq": {Type: "bigint", NotNull: true},
		"dispatched_at": {Type: "timestamp with time zone"}, "created_at": {Type: "timestamp with time zone", NotNull: true},
	}
	tb, err := checkColumns("app.Outbox", good, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if tb.Quoted != `app."Outbox"` || tb.IDType != "uuid" || tb.OrderType != "bigint" || tb.Age != "created_at" {
		t.Errorf("table %+v", tb)
	}
	want := `SELECT * FROM app."Outbox" WHERE dispatched_at IS NULL AND ((hashtext(coalesce(aggregateid::text, '')) & 2147483647) % 64) = ANY($1::int[]) AND id <> ALL($3::text[]::uuid[]) ORDER BY seq, id LIMIT $2::int`
	if got := tb.claimSQL(true); got != want {
		t.Errorf("claimSQL:\n got %s\nwant %s", got, want)
	}
	if got, want := tb.markSQL(), `UPDATE app."Outbox" SET dispatched_at = now() WHERE id = ANY($1::text[]::uuid[]) AND dispatched_at IS NULL`; got != want {
		t.Errorf("markSQL:\n got %s\nwant %s", got, want)
	}
	for _, tc := range []struct {
		name string
		edit func(map[string]postgres.Column)
		want string
	}{
		{"no dispatched column", func(m map[string]postgres.Column) { delete(m, "dispatched_at") },
			`has no column "dispatched_at" (outbox.poll.dispatched.column): ALTER TABLE app."Outbox" ADD COLUMN dispatched_at timestamptz; CREATE INDEX CONCURRENTLY "Outbox_undispatched" ON app."Outbox" (seq, id) WHERE dispatched_at IS NULL;`},
		{"dispatched not a timestamp", func(m map[string]postgres.Column) { m["dispatched_at"] = postgres.Column{Type: "boolean"} }, `is boolean; poll mode sets it to now()`},
		{"order nullable", func(m map[string]postgres.Column) { m["seq"] = postgres.Column{Type: "bigint"} }, `ALTER TABLE app."Outbox" ALTER COLUMN seq SET NOT NULL;`},
		{"no order column", func(m map[string]postgres.Column) { delete(m, "seq") }, `has no column "seq" (outbox.poll.order.column)`},
		{"no key column", func(m map[string]postgres.Column) { delete(m, "aggregateid") }, `has no column "aggregateid" (table.field.event.key)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := map[string]postgres.Column{}
			for k, v := range good {
				m[k] = v
			}
			tc.edit(m)
			_, err := checkColumns("app.Outbox", m, cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v; want it to contain %s", err, tc.want)
			}
		})
	}
}

func TestArrays(t *testing.T) {
	if got, want := textArray([]string{"a", `b"c`, `d\e`, ""}), `{"a","b\"c","d\\e",""}`; got != want {
		t.Errorf("textArray = %s, want %s", got, want)
	}
	if got, want := intArray([]int{0, 5, 63}), "{0,5,63}"; got != want {
		t.Errorf("intArray = %s, want %s", got, want)
	}
}

func TestBucketShares(t *testing.T) {
	for members, want := range map[int]int{0: 64, 1: 64, 2: 32, 3: 22, 64: 1} {
		if got := fairShare(members); got != want {
			t.Errorf("fairShare(%d) = %d, want %d", members, got, want)
		}
	}
	held := map[int]bool{0: true, 1: true}
	c := candidates(held, 1)
	if len(c) != Buckets-2 || c[0] != 23 {
		t.Errorf("candidates: %d starting at %d; want %d starting at 23", len(c), c[0], Buckets-2)
	}
	for _, b := range c {
		if held[b] {
			t.Errorf("candidates include held bucket %d", b)
		}
	}
}
