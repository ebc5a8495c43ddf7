package replication

import (
	"testing"

	"github.com/jackc/pglogrepl"
)

func decodeFrame(t *testing.T, f frame, m *Message) {
	t.Helper()
	if err := Decode(f, m); err != nil {
		t.Fatalf("Decode: %v", err)
	}
}

func TestRelationsBindOutboxRow(t *testing.T) {
	cache := NewRelations()
	var m Message
	decodeFrame(t, outboxRelationFrame(16385), &m)
	rel := cache.Put(&m.Relation)
	if rel.QualifiedName() != "public.outbox" || !rel.Columns[0].Key || rel.Columns[1].Key {
		t.Fatalf("relation = %+v", rel)
	}

	decodeFrame(t, outboxInsertFrame(16385), &m)
	row, err := cache.Row(m.Insert.RelationID, &m.Insert.New, 0x16B3748)
	if err != nil {
		t.Fatal(err)
	}
	if col, ok := row.Column("aggregate_type"); !ok || col.Kind != ColumnText || string(col.Data) != "orders" {
		t.Errorf("aggregate_type = %+v, %v", col, ok)
	}
	if col, ok := row.Column("sent_at"); !ok || col.Kind != ColumnNull {
		t.Errorf("sent_at = %+v, %v; want NULL", col, ok)
	}
	if _, ok := row.Column("no_such_column"); ok {
		t.Error("no_such_column found")
	}
}

func TestRelationsReplacedOnAlterTable(t *testing.T) {
	cache := NewRelations()
	var m Message
	decodeFrame(t, frame{'R'}.u32(7).str("").str("t").u8('d').u16(1).u8(1).str("id").u32(23).u32(0xFFFFFFFF), &m)
	before := cache.Put(&m.Relation)
	if before.QualifiedName() != "pg_catalog.t" {
		t.Errorf("empty namespace: got %q, want pg_catalog.t", before.QualifiedName())
	}

	// ALTER TABLE t ADD COLUMN note text: the server sends a new Relation message.
	decodeFrame(t, frame{'R'}.u32(7).str("public").str("t").u8('d').u16(2).
		u8(1).str("id").u32(23).u32(0xFFFFFFFF).u8(0).str("note").u32(25).u32(0xFFFFFFFF), &m)
	after := cache.Put(&m.Relation)

	if got, _ := cache.Get(7); got != after {
		t.Error("Get does not return the newest definition")
	}
	if len(before.Columns) != 1 || before.ColumnIndex("note") != -1 {
		t.Error("the earlier definition was modified")
	}
	decodeFrame(t, frame{'I'}.u32(7).u8('N').tuple("1", "hello"), &m)
	row, err := cache.Row(7, &m.Insert.New, 0x100)
	if err != nil {
		t.Fatal(err)
	}
	if col, _ := row.Column("note"); string(col.Data) != "hello" {
		t.Errorf("note = %q", col.Data)
	}
}

func TestRelationsRowErrors(t *testing.T) {
	cache := NewRelations()
	var m Message
	decodeFrame(t, outboxRelationFrame(16385), &m)
	cache.Put(&m.Relation)
	lsn, _ := pglogrepl.ParseLSN("0/16B3748")

	decodeFrame(t, frame{'I'}.u32(16385).u8('N').tuple("only", "two"), &m)
	_, err := cache.Row(16385, &m.Insert.New, lsn)
	want := "binding tuple to relation: public.outbox (OID 16385) at LSN 0/16B3748: tuple has 2 columns, the relation has 14"
	if err == nil || err.Error() != want {
		t.Errorf("column count mismatch:\n got %v\nwant %s", err, want)
	}

	_, err = cache.Row(99, &m.Insert.New, lsn)
	want = "binding tuple to relation: relation OID 99 at LSN 0/16B3748: no Relation message received for it in this session"
	if err == nil || err.Error() != want {
		t.Errorf("unknown relation:\n got %v\nwant %s", err, want)
	}
}
