package replication

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/postgres"
)

// bindColumns pairs a tuple's values with the relation's column names and
// types. Values alias the frame: valid until the next message.
// With only, it binds just the columns marked there.
func bindColumns(dst []capture.Column, rel *Relation, t *Tuple, nullable, only []bool) []capture.Column {
	for i, c := range t.Columns {
		if only != nil && (i >= len(only) || !only[i]) {
			continue
		}
		rc := &rel.Columns[i]
		v := capture.Column{Name: rc.Name, OID: rc.TypeOID, Nullable: i < len(nullable) && nullable[i]}
		switch c.Kind {
		case ColumnNull:
			v.Null = true
		case ColumnUnchanged:
			// An unchanged TOASTed value: the server did not send it.
			// Only updates carry these.
			v.Unchanged = true
		default:
			v.Text = c.Data
		}
		dst = append(dst, v)
	}
	return dst
}

// relCatalog is what pgoutput does not send about a relation's columns, in
// the order of its Relation message: whether each accepts NULL
// (JsonConverter schemas show it as "optional"), and whether it is part of
// the primary key (Debezium's record key, whatever the replica identity).
type relCatalog struct {
	nullable []bool
	primary  []bool
}

// keyColumns marks the columns that identify a row: the primary key, or,
// for a table without one, the replica identity the Relation message flags.
// With REPLICA IDENTITY FULL pgoutput flags every column, so the primary
// key must come from the catalog: otherwise every update would look like
// a key change.
func (c relCatalog) keyColumns(rel *Relation) []bool {
	for _, p := range c.primary {
		if p {
			return c.primary
		}
	}
	key := make([]bool, len(rel.Columns))
	for i, rc := range rel.Columns {
		key[i] = rc.Key
	}
	return key
}

// readRelCatalog reads nullability and primary-key membership of a
// relation's columns.
func readRelCatalog(ctx context.Context, conn *pgx.Conn, rel *Relation) (relCatalog, error) {
	byName, err := postgres.Columns(ctx, conn, strconv.FormatUint(uint64(rel.ID), 10))
	if err != nil {
		return relCatalog{}, fmt.Errorf("reading the columns of %s: %w", rel.QualifiedName(), err)
	}
	c := relCatalog{nullable: make([]bool, len(rel.Columns)), primary: make([]bool, len(rel.Columns))}
	for i, col := range rel.Columns {
		a, ok := byName[col.Name]
		c.nullable[i] = ok && !a.NotNull
		c.primary[i] = a.Primary
	}
	return c, nil
}

// keyChanged reports whether an UPDATE changed the row's key. The old
// tuple ('K' key-only or 'O' full) carries the old key values; a key column
// it does not carry ('n' in a 'K' tuple of another replica identity) cannot
// be compared and counts as unchanged.
func keyChanged(newT, old *Tuple, key []bool) bool {
	for i := range key {
		if !key[i] || i >= len(old.Columns) || i >= len(newT.Columns) {
			continue
		}
		o, n := old.Columns[i], newT.Columns[i]
		if o.Kind == ColumnNull && n.Kind != ColumnNull {
			continue
		}
		if o.Kind != n.Kind || string(o.Data) != string(n.Data) {
			return true
		}
	}
	return false
}
