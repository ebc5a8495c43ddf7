package replication

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
)

// frame builds pgoutput messages byte by byte for tests, the fuzz seed
// corpus and the benchmark.
type frame []byte

func (f frame) u8(v byte) frame { return append(f, v) }
func (f frame) u16(v uint16) frame {
	return append(f, byte(v>>8), byte(v))
}
func (f frame) u32(v uint32) frame {
	return append(f, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}
func (f frame) u64(v uint64) frame  { return f.u32(uint32(v >> 32)).u32(uint32(v)) }
func (f frame) str(s string) frame  { return append(append(f, s...), 0) }
func (f frame) text(s string) frame { return f.u8('t').u32(uint32(len(s))).raw(s) }
func (f frame) raw(s string) frame  { return append(f, s...) }
func (f frame) tuple(vals ...any) frame { // string: text, nil: null, byte: that kind with no data
	f = f.u16(uint16(len(vals)))
	for _, v := range vals {
		switch v := v.(type) {
		case string:
			f = f.text(v)
		case nil:
			f = f.u8('n')
		case byte:
			f = f.u8(v)
		case []byte:
			f = f.u8('b').u32(uint32(len(v))).raw(string(v))
		}
	}
	return f
}

// commitTime is 2024-01-02 03:04:05.000006 UTC as PostgreSQL sends it.
var commitTime = time.Date(2024, 1, 2, 3, 4, 5, 6000, time.UTC)

func pgMicros(t time.Time) uint64 { return uint64(t.UnixMicro() - postgresEpochMicros) }

// outboxColumns are the fixture's outbox table columns, in table order.
var outboxColumns = []struct {
	name string
	oid  uint32
}{
	{"message_id", 2950}, {"aggregate_type", 25}, {"aggregate_id", 25}, {"event_type", 25},
	{"payload", 3802}, {"status", 25}, {"created_at", 1184}, {"updated_at", 1184},
	{"sent_at", 1184}, {"retry_count", 23}, {"last_error", 25}, {"next_retry_at", 1184},
	{"version", 23}, {"remark", 25},
}

func outboxRelationFrame(oid uint32) frame {
	f := frame{'R'}.u32(oid).str("public").str("outbox").u8('d').u16(uint16(len(outboxColumns)))
	for i, c := range outboxColumns {
		flags := byte(0)
		if i == 0 {
			flags = 1
		}
		f = f.u8(flags).str(c.name).u32(c.oid).u32(0xFFFFFFFF)
	}
	return f
}

func outboxInsertFrame(oid uint32) frame {
	return frame{'I'}.u32(oid).u8('N').tuple(
		"0190f1f4-5b6a-7c8d-9e0f-112233445566", "orders", "9191642889", "paid",
		`{"orderId": 9191642889, "payableAmount": 199.00}`, "PENDING",
		"2024-01-02 03:04:05.000006+00", "2024-01-02 03:04:05.000006+00", nil, "0",
		nil, nil, "0", nil)
}

// validFrames holds one well-formed frame of every message type, with the
// message Decode must produce. The fuzz seed corpus starts from them too.
func validFrames() []struct {
	name  string
	frame frame
	want  Message
} {
	return []struct {
		name  string
		frame frame
		want  Message
	}{
		{"begin", frame{'B'}.u64(0x16B3748).u64(pgMicros(commitTime)).u32(771),
			Message{Type: MessageBegin, Begin: Begin{FinalLSN: 0x16B3748, CommitTime: commitTime, Xid: 771}}},
		{"commit", frame{'C'}.u8(0).u64(0x16B3748).u64(0x16B3778).u64(pgMicros(commitTime)),
			Message{Type: MessageCommit, Commit: Commit{CommitLSN: 0x16B3748, EndLSN: 0x16B3778, CommitTime: commitTime}}},
		{"origin", frame{'O'}.u64(0x1000).str("pg_16399"),
			Message{Type: MessageOrigin, Origin: Origin{CommitLSN: 0x1000, Name: "pg_16399"}}},
		{"relation", frame{'R'}.u32(16385).str("public").str("outbox").u8('d').u16(2).
			u8(1).str("message_id").u32(2950).u32(0xFFFFFFFF).
			u8(0).str("aggregate_type").u32(25).u32(0xFFFFFFFF),
			Message{Type: MessageRelation, Relation: RelationMessage{ID: 16385, Namespace: "public", Name: "outbox",
				ReplicaIdentity: 'd', Columns: []RelationColumn{
					{Key: true, Name: "message_id", TypeOID: 2950, TypeModifier: -1},
					{Name: "aggregate_type", TypeOID: 25, TypeModifier: -1}}}}},
		{"type", frame{'Y'}.u32(16400).str("public").str("mood"),
			Message{Type: MessageDataType, DataType: TypeMessage{OID: 16400, Namespace: "public", Name: "mood"}}},
		{"insert", frame{'I'}.u32(16385).u8('N').tuple("a", nil, ColumnUnchanged, []byte{1, 2}, ""),
			Message{Type: MessageInsert, Insert: Insert{RelationID: 16385, New: Tuple{Columns: []Column{
				{Kind: 't', Data: []byte("a")}, {Kind: 'n'}, {Kind: 'u'}, {Kind: 'b', Data: []byte{1, 2}}, {Kind: 't', Data: []byte{}}}}}}},
		{"update new only", frame{'U'}.u32(16385).u8('N').tuple("x"),
			Message{Type: MessageUpdate, Update: Update{RelationID: 16385, New: Tuple{Columns: []Column{{Kind: 't', Data: []byte("x")}}}}}},
		{"update key", frame{'U'}.u32(16385).u8('K').tuple("k", nil).u8('N').tuple("k2", "v"),
			Message{Type: MessageUpdate, Update: Update{RelationID: 16385, OldKind: 'K',
				Old: Tuple{Columns: []Column{{Kind: 't', Data: []byte("k")}, {Kind: 'n'}}},
				New: Tuple{Columns: []Column{{Kind: 't', Data: []byte("k2")}, {Kind: 't', Data: []byte("v")}}}}}},
		{"update old", frame{'U'}.u32(16385).u8('O').tuple("a").u8('N').tuple("b"),
			Message{Type: MessageUpdate, Update: Update{RelationID: 16385, OldKind: 'O',
				Old: Tuple{Columns: []Column{{Kind: 't', Data: []byte("a")}}},
				New: Tuple{Columns: []Column{{Kind: 't', Data: []byte("b")}}}}}},
		{"delete key", frame{'D'}.u32(16385).u8('K').tuple("k"),
			Message{Type: MessageDelete, Delete: Delete{RelationID: 16385, OldKind: 'K',
				Old: Tuple{Columns: []Column{{Kind: 't', Data: []byte("k")}}}}}},
		{"delete old", frame{'D'}.u32(16385).u8('O').tuple("k", nil),
			Message{Type: MessageDelete, Delete: Delete{RelationID: 16385, OldKind: 'O',
				Old: Tuple{Columns: []Column{{Kind: 't', Data: []byte("k")}, {Kind: 'n'}}}}}},
		{"truncate", frame{'T'}.u32(2).u8(TruncateCascade | TruncateRestartIdentity).u32(16385).u32(16390),
			Message{Type: MessageTruncate, Truncate: Truncate{Options: 3, RelationIDs: []uint32{16385, 16390}}}},
		{"message transactional", frame{'M'}.u8(1).u64(0x2000).str("outbox").u32(5).raw("hello"),
			Message{Type: MessageLogical, Logical: LogicalMessage{Transactional: true, LSN: 0x2000, Prefix: "outbox", Content: []byte("hello")}}},
		{"message empty", frame{'M'}.u8(0).u64(0x2000).str("").u32(0),
			Message{Type: MessageLogical, Logical: LogicalMessage{LSN: 0x2000, Content: []byte{}}}},
	}
}

func TestDecodeValidFrames(t *testing.T) {
	for _, tc := range validFrames() {
		t.Run(tc.name, func(t *testing.T) {
			var got Message
			if err := Decode(tc.frame, &got); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Decode:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// Every proper prefix of a valid frame is a short frame: it must produce a
// *DecodeError naming the message type and an offset inside the frame, and
// never panic.
func TestDecodeTruncatedFrames(t *testing.T) {
	for _, tc := range validFrames() {
		for n := 0; n < len(tc.frame); n++ {
			var m Message
			err := Decode(tc.frame[:n], &m)
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("%s cut to %d bytes: got %v, want a *DecodeError", tc.name, n, err)
			}
			if n > 0 && de.Type != tc.want.Type {
				t.Errorf("%s cut to %d bytes: error names %v: %v", tc.name, n, de.Type, err)
			}
			if de.Offset > n {
				t.Errorf("%s cut to %d bytes: offset %d is past the end: %v", tc.name, n, de.Offset, err)
			}
		}
	}
}

func TestDecodeTrailingBytes(t *testing.T) {
	for _, tc := range validFrames() {
		var m Message
		err := Decode(append(tc.frame, 0), &m)
		if err == nil || !strings.Contains(err.Error(), "1 unexpected trailing bytes") {
			t.Errorf("%s with a trailing byte: got %v", tc.name, err)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name  string
		frame frame
		want  string
	}{
		{"empty", frame{}, "pgoutput: empty frame"},
		{"unknown type", frame{'S'}.u32(1).u8(1),
			"pgoutput: unknown message 'S': type byte at offset 0: unsupported (outboxrelay requests pgoutput proto_version 1 without streaming)"},
		{"column length past end", frame{'I'}.u32(16385).u8('N').u16(4).text("a").text("b").text("c").u8('t').u32(1000).raw("twelve bytes"),
			"pgoutput: Insert: new tuple column 3 at offset 27: length 1000 exceeds remaining 12 bytes"},
		{"negative column length", frame{'I'}.u32(1).u8('N').u16(1).u8('t').u32(0xFFFFFFFF),
			"pgoutput: Insert: new tuple column 0 at offset 9: negative length -1"},
		{"unknown value kind", frame{'I'}.u32(1).u8('N').u16(1).u8('x'),
			"pgoutput: Insert: new tuple column 0 at offset 8: unknown value kind 'x' (want 'n', 'u', 't' or 'b')"},
		{"column count past end", frame{'I'}.u32(1).u8('N').u16(3).u8('n'),
			"pgoutput: Insert: new tuple column count at offset 6: count 3 needs at least 3 bytes, 1 remain"},
		{"insert without N", frame{'I'}.u32(1).u8('K').tuple("a"),
			"pgoutput: Insert: new tuple marker at offset 5: got 'K', want 'N'"},
		{"update without N", frame{'U'}.u32(1).u8('K').tuple("a").u8('X').tuple("b"),
			"pgoutput: Update: new tuple marker at offset 14: got 'X', want 'N'"},
		{"delete bad marker", frame{'D'}.u32(1).u8('N').tuple("a"),
			"pgoutput: Delete: old tuple marker at offset 5: got 'N', want 'K' or 'O'"},
		{"relation name unterminated", frame{'R'}.u32(1).str("public").raw("outbox"),
			"pgoutput: Relation: relation name at offset 12: no NUL terminator in the 6 remaining bytes"},
		{"relation column count forged", frame{'R'}.u32(1).str("s").str("t").u8('d').u16(65535),
			"pgoutput: Relation: column count at offset 10: count 65535 needs at least 655350 bytes, 0 remain"},
		{"truncate count forged", frame{'T'}.u32(1 << 30).u8(0).u32(1),
			"pgoutput: Truncate: relation count at offset 1: count 1073741824 needs at least 4294967296 bytes, 5 remain"},
		{"truncate count negative", frame{'T'}.u32(0x80000000).u8(0),
			"pgoutput: Truncate: relation count at offset 1: negative count -2147483648"},
		{"message content past end", frame{'M'}.u8(0).u64(1).str("p").u32(10).raw("abc"),
			"pgoutput: Message: content at offset 12: length 10 exceeds remaining 3 bytes"},
		{"message with a v2 xid", frame{'M'}.u32(771).u8(0).u64(1).str("p").u32(0),
			"pgoutput: Message: content at offset 11: length 368 exceeds remaining 5 bytes"},
		{"short begin", frame{'B'}.u64(1).u32(0),
			"pgoutput: Begin: commit timestamp at offset 9: needs 8 bytes, 4 remain"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m Message
			err := Decode(tc.frame, &m)
			if err == nil || err.Error() != tc.want {
				t.Errorf("Decode:\n got %v\nwant %s", err, tc.want)
			}
		})
	}
}

// Decoding into a reused Message must not leak the previous frame's
// columns or old tuple into the next one.
func TestDecodeReusesMessage(t *testing.T) {
	var m Message
	if err := Decode(frame{'U'}.u32(1).u8('K').tuple("k").u8('N').tuple("a", "b"), &m); err != nil {
		t.Fatal(err)
	}
	if err := Decode(frame{'U'}.u32(1).u8('N').tuple("c"), &m); err != nil {
		t.Fatal(err)
	}
	if m.Update.OldKind != OldTupleNone {
		t.Errorf("OldKind = %q, want none", m.Update.OldKind)
	}
	if len(m.Update.New.Columns) != 1 || string(m.Update.New.Columns[0].Data) != "c" {
		t.Errorf("New = %+v, want one column c", m.Update.New)
	}
	if err := Decode(frame{'T'}.u32(1).u8(0).u32(9), &m); err != nil {
		t.Fatal(err)
	}
	if err := Decode(frame{'T'}.u32(0).u8(0), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Truncate.RelationIDs) != 0 {
		t.Errorf("RelationIDs = %v, want none", m.Truncate.RelationIDs)
	}
}

func TestDecodeInsertDoesNotAllocate(t *testing.T) {
	f := outboxInsertFrame(16385)
	var m Message
	allocs := testing.AllocsPerRun(100, func() {
		if err := Decode(f, &m); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Decode(Insert) allocates %.1f times per frame, want 0", allocs)
	}
}

func TestCommitLSNsAreLSNs(t *testing.T) {
	var m Message
	if err := Decode(frame{'C'}.u8(0).u64(0x100000010).u64(0x100000040).u64(0), &m); err != nil {
		t.Fatal(err)
	}
	want, _ := capture.ParseLSN("1/40")
	if m.Commit.EndLSN != want {
		t.Errorf("EndLSN = %v, want %v", m.Commit.EndLSN, want)
	}
}

func BenchmarkDecodeInsert(b *testing.B) {
	f := outboxInsertFrame(16385)
	var m Message
	b.ReportAllocs()
	b.SetBytes(int64(len(f)))
	for b.Loop() {
		if err := Decode(f, &m); err != nil {
			b.Fatal(err)
		}
	}
}
