package replication

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
}

// QualifiedName is "namespace.name", the form table.include.list matches.
func (r *Relation) QualifiedName() string { return r.qualified }

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
	}
	c.byID[m.ID] = rel
	return rel
}

// Get returns the cached relation with the given OID.
func (c *Relations) Get(id uint32) (*Relation, bool) {
	rel, ok := c.byID[id]
	return rel, ok
}
