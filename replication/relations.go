package replication

import (
	"fmt"

	"github.com/jackc/pglogrepl"
)

// Relation is what the cache knows about one table, from its latest
// Relation message. A Relation is never modified after Put returns it:
// a changed table (ALTER TABLE … ADD COLUMN) gets a new *Relation, so a
// row bound to the old definition keeps meaning what it meant.
type Relation struct {
	ID              uint32
	Namespace       string // "pg_catalog" where the protocol sends an empty string
	Name            string
	ReplicaIdentity byte // relreplident: 'd' default, 'n' nothing, 'f' full, 'i' index
	Columns         []RelationColumn

	qualified string
	index     map[string]int
}

// QualifiedName is "namespace.name", the form table.include.list matches.
func (r *Relation) QualifiedName() string { return r.qualified }

// ColumnIndex returns the position of the named column in the relation's
// tuples, or -1 when the table has no such column.
func (r *Relation) ColumnIndex(name string) int {
	if i, ok := r.index[name]; ok {
		return i
	}
	return -1
}

// Relations caches Relation messages by relation OID. The server sends a
// Relation message before the first change of a table in each session and
// again whenever the table's definition changed, so the cache never asks
// the database. It is owned by the goroutine that decodes the stream and is
// not safe for concurrent use; the *Relation values it hands out are.
type Relations struct {
	byID map[uint32]*Relation
}

// NewRelations returns an empty cache.
func NewRelations() *Relations {
	return &Relations{byID: make(map[uint32]*Relation)}
}

// Put stores the relation a Relation message describes, replacing any
// earlier definition of the same OID, and returns it. It takes ownership
// of m.Columns, which Decode allocates afresh for every Relation message.
func (c *Relations) Put(m *RelationMessage) *Relation {
	ns := m.Namespace
	if ns == "" {
		ns = "pg_catalog"
	}
	rel := &Relation{
		ID:              m.ID,
		Namespace:       ns,
		Name:            m.Name,
		ReplicaIdentity: m.ReplicaIdentity,
		Columns:         m.Columns,
		qualified:       ns + "." + m.Name,
		index:           make(map[string]int, len(m.Columns)),
	}
	for i, col := range m.Columns {
		rel.index[col.Name] = i
	}
	c.byID[m.ID] = rel
	return rel
}

// Get returns the cached relation with the given OID.
func (c *Relations) Get(id uint32) (*Relation, bool) {
	rel, ok := c.byID[id]
	return rel, ok
}

// Row is a decoded tuple together with the relation that names its
// columns. Columns shares the tuple's storage: like the tuple, it is valid
// only until the next frame is decoded.
type Row struct {
	Relation *Relation
	Columns  []Column
}

// Column returns the value of the named column; ok is false when the
// relation has no column of that name.
func (r Row) Column(name string) (col Column, ok bool) {
	i := r.Relation.ColumnIndex(name)
	if i < 0 {
		return Column{}, false
	}
	return r.Columns[i], true
}

// Row binds a decoded tuple of relation id to the cached definition. The
// LSN is that of the change and only serves the error: a tuple of an
// unknown relation, or one whose column count differs from the cached
// definition, means the stream and the cache disagree about the table, and
// routing it by position would put values under the wrong names.
func (c *Relations) Row(id uint32, t *Tuple, lsn pglogrepl.LSN) (Row, error) {
	rel, ok := c.byID[id]
	if !ok {
		return Row{}, fmt.Errorf("binding tuple to relation: relation OID %d at LSN %s: no Relation message received for it in this session", id, lsn)
	}
	if len(t.Columns) != len(rel.Columns) {
		return Row{}, fmt.Errorf("binding tuple to relation: %s (OID %d) at LSN %s: tuple has %d columns, the relation has %d",
			rel.qualified, id, lsn, len(t.Columns), len(rel.Columns))
	}
	return Row{Relation: rel, Columns: t.Columns}, nil
}
