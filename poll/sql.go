package poll

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/outboxrelay/outboxrelay/postgres"
)

// Buckets is how many buckets aggregates are hashed into; replicas share
// the buckets, each held by one replica's advisory lock (see DESIGN.md,
// Poll mode). It is fixed: every replica must agree on it.
const Buckets = 64

// maxMembers bounds the replicas that count themselves in for a fair
// share of the buckets.
const maxMembers = 64

// table is one outbox table as poll mode reads it.
type table struct {
	Name       string // "schema.table"
	Quoted     string // for SQL
	ID         string // event id column, quoted
	IDType     string // its type, format_type
	Key        string // aggregate key column, quoted
	Order      string // order column, quoted
	OrderType  string
	Dispatched string // dispatched column, quoted
	Age        string // timestamp column the watchdog measures, quoted; "" when none
}

// bucketExpr is the bucket of a row's aggregate: the same on every replica
// (hashtext is the server's), NULL keys in bucket of ”.
func (t *table) bucketExpr() string {
	return "((hashtext(coalesce(" + t.Key + "::text, '')) & 2147483647) % " + strconv.Itoa(Buckets) + ")"
}

// claimSQL reads the next batch of undispatched rows of the held buckets,
// in (order, id) order: $1 the buckets (int[]), $2 the limit, and with
// pending rows $3, the event ids (as text) of this replica's rows claimed
// and not yet marked, which are skipped. Every read starts at the oldest
// undispatched row, so it sees every row committed by then (a row
// committed late with a lower order value too). The rows are read as
// text, the form pgoutput sends.
func (t *table) claimSQL(pending bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT * FROM %s WHERE %s IS NULL AND %s = ANY($1::int[])", t.Quoted, t.Dispatched, t.bucketExpr())
	if pending {
		fmt.Fprintf(&b, " AND %s <> ALL($3::text[]::%s[])", t.ID, t.IDType)
	}
	fmt.Fprintf(&b, " ORDER BY %s, %s LIMIT $2::int", t.Order, t.ID)
	return b.String()
}

// markSQL marks rows dispatched by event id ($1, an array of ids as text);
// a row marked already (by an earlier owner of its bucket) is left alone.
func (t *table) markSQL() string {
	return fmt.Sprintf("UPDATE %s SET %s = now() WHERE %s = ANY($1::text[]::%s[]) AND %s IS NULL", t.Quoted, t.Dispatched, t.ID, t.IDType, t.Dispatched)
}

// stuckSQL counts the undispatched rows older than $1 (an interval) and
// names the oldest.
func (t *table) stuckSQL() string {
	return fmt.Sprintf("SELECT count(*), min(%s::text) FROM %s WHERE %s IS NULL AND %s < now() - $1::interval", t.ID, t.Quoted, t.Dispatched, t.Age)
}

// IndexSQL is the partial index that keeps a poll cheap: the undispatched
// rows in claim order.
func IndexSQL(tableName, order, id, dispatched string) string {
	schema, name, _ := strings.Cut(tableName, ".")
	idx := postgres.QuoteIdent(name + "_undispatched")
	cols := postgres.QuoteIdent(order)
	if order != id {
		cols += ", " + postgres.QuoteIdent(id)
	}
	return fmt.Sprintf("CREATE INDEX CONCURRENTLY %s ON %s.%s (%s) WHERE %s IS NULL;", idx,
		postgres.QuoteIdent(schema), postgres.QuoteIdent(name), cols, postgres.QuoteIdent(dispatched))
}

// textArray is a PostgreSQL array literal of the values, each quoted.
func textArray(vals []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, v := range vals {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		for j := 0; j < len(v); j++ {
			if v[j] == '"' || v[j] == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(v[j])
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// intArray is a PostgreSQL array literal of ints.
func intArray(vals []int) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = strconv.Itoa(v)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// fairShare is how many buckets one of members replicas holds.
func fairShare(members int) int {
	if members < 1 {
		members = 1
	}
	return (Buckets + members - 1) / members
}

// candidates lists the buckets not held, starting at a member-specific
// offset so that replicas do not all try the same ones first.
func candidates(held map[int]bool, member int) []int {
	var out []int
	start := (member * 23) % Buckets // 23 is prime to Buckets: members spread out
	for i := 0; i < Buckets; i++ {
		b := (start + i) % Buckets
		if !held[b] {
			out = append(out, b)
		}
	}
	return out
}
