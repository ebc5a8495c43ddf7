package sink

import (
	"encoding/json"
	"testing"
	"time"
)

// TestOffsetKeyIsConnects: Kafka Connect keeps a connector's offsets by
// the key's bytes as its JsonConverter (Jackson) writes them; Go's
// json.Marshal escapes <, > and & where Jackson does not, so a name with
// one of them would have been a key of its own (and, hashed, another
// partition): Debezium would never have read the position, nor outboxrelay
// Debezium's.
func TestOffsetKeyIsConnects(t *testing.T) {
	for _, tc := range []struct{ connector, server, want string }{
		{"pg-outbox-connector.order_db.public", "order_db", `["pg-outbox-connector.order_db.public",{"server":"order_db"}]`},
		{"a&b<c>", "x", `["a&b<c>",{"server":"x"}]`},
		{`quote"d`, "é", `["quote\"d",{"server":"é"}]`},
	} {
		if got := string(offsetKey(tc.connector, tc.server)); got != tc.want {
			t.Errorf("offsetKey(%q, %q) = %s, want %s", tc.connector, tc.server, got, tc.want)
		}
	}
}

// TestOffsetValueIsDebeziums: the value outboxrelay writes has every
// field Debezium's PostgresOffsetContext.Loader reads to resume between
// two transactions, and reads back as written; Debezium's own value (as
// 3.7 writes it after an insert) reads with its fields.
func TestOffsetValueIsDebeziums(t *testing.T) {
	o := &Offsets{topic: "connect-offsets"}
	at := time.UnixMicro(1_764_000_000_123_456)
	v, err := o.value(Offset{LSN: 0x1a2b3c, Time: at, Origin: "7/1"})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(v, &m); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"lsn": 1715004.0, "lsn_proc": 1715004.0, "lsn_commit": 1715004.0, "messageType": "COMMIT",
		"ts_usec": 1764000000123456.0, "outboxrelay": true, "outboxrelay_origin": "7/1"} {
		if m[k] != want {
			t.Errorf("value %s: %s = %v, want %v", v, k, m[k], want)
		}
	}
	var back offsetValue
	if err := json.Unmarshal(v, &back); err != nil {
		t.Fatal(err)
	}
	if got := back.offset(); got.LSN != 0x1a2b3c || got.Commit != 0x1a2b3c || got.Proc != 0x1a2b3c || got.Type != "COMMIT" || !got.ByRelay || !got.Time.Equal(at) || got.InSnapshot {
		t.Errorf("read back %+v", got)
	}

	debezium := `{"transaction_id":null,"lsn_proc":24410360,"messageType":"INSERT","lsn_commit":24410128,"lsn":24410360,"txId":812,"lsn_events_processed":1,"ts_usec":1764000000000000}`
	var dv offsetValue
	if err := json.Unmarshal([]byte(debezium), &dv); err != nil {
		t.Fatal(err)
	}
	if got := dv.offset(); got.Proc != 24410360 || got.Commit != 24410128 || got.Type != "INSERT" || got.Xid != 812 || got.Events != 1 || got.ByRelay || got.InSnapshot {
		t.Errorf("Debezium's value read as %+v", got)
	}
}

// TestOffsetValueSnapshot: a value written during Debezium's initial
// snapshot is one until its last record or snapshot_completed.
func TestOffsetValueSnapshot(t *testing.T) {
	for value, want := range map[string]bool{
		`{"lsn":100,"txId":5,"ts_usec":1,"snapshot":"INITIAL","last_snapshot_record":false}`: true,
		`{"lsn":100,"ts_usec":1,"snapshot":true,"last_snapshot_record":false}`:               true,
		`{"lsn":100,"ts_usec":1,"snapshot":"INITIAL","last_snapshot_record":true}`:           false,
		`{"lsn":100,"ts_usec":1,"snapshot":"INITIAL","snapshot_completed":true}`:             false,
		`{"lsn":100,"ts_usec":1,"snapshot":false}`:                                           false,
		`{"lsn":100,"lsn_proc":100,"ts_usec":1}`:                                             false,
	} {
		var v offsetValue
		if err := json.Unmarshal([]byte(value), &v); err != nil {
			t.Fatal(err)
		}
		if got := v.offset().InSnapshot; got != want {
			t.Errorf("%s: InSnapshot = %v, want %v", value, got, want)
		}
	}
}
