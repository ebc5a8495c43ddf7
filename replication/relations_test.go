package replication

import "testing"

func decodeFrame(t *testing.T, f frame, m *Message) {
	t.Helper()
	if err := Decode(f, m); err != nil {
		t.Fatalf("Decode: %v", err)
	}
}

func TestRelationsPutGet(t *testing.T) {
	cache := NewRelations()
	var m Message
	decodeFrame(t, outboxRelationFrame(16385), &m)
	rel := cache.Put(&m.Relation)
	if rel.QualifiedName() != "public.outbox" || !rel.Columns[0].Key || rel.Columns[1].Key {
		t.Fatalf("relation = %+v", rel)
	}

	if got, ok := cache.Get(16385); !ok || got != rel {
		t.Errorf("Get(16385) = %v, %v", got, ok)
	}
	if _, ok := cache.Get(99); ok {
		t.Error("Get found a relation that was never sent")
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
	if len(before.Columns) != 1 || len(after.Columns) != 2 || after.Columns[1].Name != "note" {
		t.Error("the earlier definition was modified, or the new one lacks the added column")
	}
}
