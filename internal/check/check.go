// Package check is outboxrelay check: every precondition of run, checked
// with run's own parsed configuration and, where run has a check of its
// own (server version, wal_level, the role), run's own code, so that the
// two cannot disagree. Each result is a line ✓, ⚠ (it works, but a
// verification is weakened) or ✗, with the fix under each ⚠ and ✗.
package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/internal/setup"
	"github.com/outboxrelay/outboxrelay/postgres"
	"github.com/outboxrelay/outboxrelay/relay"
	"github.com/outboxrelay/outboxrelay/replication"
	"github.com/outboxrelay/outboxrelay/router"
	"github.com/outboxrelay/outboxrelay/sink"
)

// Result is one line of `outboxrelay check`.
type Result struct {
	Name   string // what was checked, e.g. "wal_level"
	OK     bool
	Warn   bool   // OK, but a verification is weakened: ⚠, with the fix
	Detail string // what was found
	Fix    string // for a failed or weakened check: the SQL to run or the key to set
}

// Format writes one line per check, ✓, ⚠ or ✗, and under each ⚠ and ✗
// the fix; it returns how many failed (a ⚠ is not a failure).
func Format(w io.Writer, results []Result) int {
	failed := 0
	for _, r := range results {
		mark := "✓"
		switch {
		case !r.OK:
			mark = "✗"
			failed++
		case r.Warn:
			mark = "⚠"
		}
		line := mark + " " + r.Name
		if r.Detail != "" {
			line += ": " + r.Detail
		}
		fmt.Fprintln(w, line)
		if (!r.OK || r.Warn) && r.Fix != "" {
			for _, l := range strings.Split(r.Fix, "\n") {
				fmt.Fprintln(w, "    fix: "+l)
			}
		}
	}
	return failed
}

// checker gathers results; each check is a method that appends to it.
type checker struct {
	results []Result
	pg      *replication.Config
	router  router.Config
	kafka   sink.Config
	jan     postgres.JanitorConfig
	rt      *router.Router
	prod    *sink.Producer
	log     *slog.Logger
	// tolerateAll is errors.tolerance=all: a poison message is skipped or
	// dead-lettered, not a stop.
	tolerateAll bool
	// exactlyOnce is exactly.once.support=required: the records go out in
	// Kafka transactions, the idempotent producer writes dead letters.
	eos bool

	conn      *pgx.Conn
	onStandby bool     // conn is a hot standby (decoding there, database.primary.hostname set)
	tables    []string // outbox tables found
	// sample holds the records routed from recent rows, by topic: the
	// largest record size per topic.
	largest map[string]int
	samples map[string]router.Record // one record per topic, copied (keepSample)
	st      startState               // for start
	kafkaOK bool                     // Kafka answered
}

func (c *checker) add(fs ...replication.Finding) {
	for _, f := range fs {
		c.results = append(c.results, Result{Name: f.Name, OK: f.OK, Detail: f.Detail, Fix: f.Fix})
	}
}

func (c *checker) pass(name, detail string) {
	c.results = append(c.results, Result{Name: name, OK: true, Detail: detail})
}

func (c *checker) fail(name, detail, fix string) {
	c.results = append(c.results, Result{Name: name, Detail: detail, Fix: fix})
}

func (c *checker) warn(name, detail, fix string) {
	c.results = append(c.results, Result{Name: name, OK: true, Warn: true, Detail: detail, Fix: fix})
}

// verification is a ⚠ line for each PostgreSQL verification the settings
// weaken (postgres.Config.Weaknesses, the same the relay WARNs at
// start-up), or one ✓ when there is none.
func (c *checker) verification(pg *postgres.Config) {
	ws := pg.Weaknesses()
	for _, w := range ws {
		c.warn("PostgreSQL verification ("+w.Key+")", w.Detail, w.Fix)
	}
	if len(ws) == 0 {
		c.pass("PostgreSQL verification", "database.sslmode="+pg.SSLMode+": the server's certificate and host name are verified")
	}
}

// kafkaVerification is a ⚠ line for each Kafka verification the settings
// weaken (sink.Config.Weaknesses, the same the relay WARNs at start-up),
// or one ✓ when there is none.
func (c *checker) kafkaVerification() {
	ws := c.kafka.Weaknesses()
	for _, w := range ws {
		c.warn("Kafka verification ("+w.Key+")", w.Detail, w.Fix)
	}
	if len(ws) == 0 {
		c.pass("Kafka verification", "security.protocol="+c.kafka.SecurityProtocol+": TLS, the brokers' certificate and host name are verified")
	}
}

// connFix is the fix under a failed PostgreSQL connection.
func connFix(err error) string {
	if errors.Is(err, postgres.ErrAuthMethod) {
		return "store the role's password as SCRAM-SHA-256 (and pg_hba.conf at scram-sha-256), or allow the method with database.require_auth, as the error says"
	}
	return "check database.hostname, database.port, database.dbname, database.user and database.password (and pg_hba.conf for this client)"
}

// Run runs every check against PostgreSQL and Kafka with set's
// configuration and writes the results to w, secrets scrubbed. It returns
// an error when any check failed.
func Run(ctx context.Context, set *setup.Setup, prod *sink.Producer, w io.Writer, log *slog.Logger) error {
	c := &checker{pg: &set.Postgres, router: set.Router.Config(), kafka: set.Kafka, jan: set.Janitor,
		rt: set.Router, prod: prod, log: log, largest: map[string]int{}, samples: map[string]router.Record{}}
	c.tolerateAll, _ = relay.ParseTolerance(set.Tolerance) // setup checked it
	c.eos = set.ExactlyOnceRequired
	c.verification(&set.Postgres.Config)
	if set.Poll.Poll() {
		c.pollPostgres(ctx, set.Poll)
	} else {
		c.postgres(ctx)
	}
	c.kafkaVerification()
	c.kafkaChecks(ctx)
	if c.kafkaOK {
		c.start(ctx, set)
	}
	if set.ExactlyOnceRequired {
		c.exactlyOnce(ctx, set.ExactlyOnce, set.Offsets)
	}
	conv, err := set.RegistryConverter()
	if err != nil {
		c.fail("schema registry", err.Error(), "") // setup.Parse refuses it first
	}
	c.registryChecks(ctx, set.Registry, conv)
	if c.conn != nil {
		c.conn.Close(context.Background())
	}
	for i := range c.results {
		c.results[i].Detail = set.File.Scrub(c.results[i].Detail)
		c.results[i].Fix = set.File.Scrub(c.results[i].Fix)
	}
	if n := Format(w, c.results); n > 0 {
		return fmt.Errorf("check: %d of %d checks failed", n, len(c.results))
	}
	return nil
}

// postgres runs the PostgreSQL checks in order; a failure that makes the
// later ones meaningless (no connection, no table) ends them.
func (c *checker) postgres(ctx context.Context) {
	cfg := c.pg
	who := cfg.User + "@" + cfg.Where()
	conn, err := cfg.Connect(ctx)
	if err != nil {
		c.fail("PostgreSQL connection", err.Error(), connFix(err))
		return
	}
	c.conn = conn
	c.pass("PostgreSQL connection", who)

	set, err := replication.ReadSettings(ctx, conn)
	if err != nil {
		c.fail("server settings", err.Error(), "")
		return
	}
	// The same findings that stop run: version and wal_level, then the
	// capacity, then the role's REPLICATION attribute.
	findings := set.Findings(cfg)
	c.add(findings[:2]...)
	slot, slotErr := replication.InspectSlot(ctx, conn, cfg.Slot)
	c.capacity(ctx, set.MaxSlots, set.MaxSenders, slot)
	c.add(findings[2:]...)
	if set.InRecovery && set.VersionNum >= 160000 && cfg.Primary() != nil {
		c.onStandby = true
		c.hotStandby(ctx)
	}
	c.messages(ctx, slot)
	if !c.findTables(ctx) {
		return
	}
	c.privileges(ctx)
	c.publication(ctx)
	for _, t := range c.tables {
		c.columns(ctx, t)
		c.replicaIdentity(ctx, t)
	}
	if slotErr != nil {
		c.fail("replication slot "+cfg.Slot, slotErr.Error(), "")
	} else {
		c.st = startState{read: true, slot: slot}
		c.slot(ctx, slot)
		if cfg.SlotFailover && set.VersionNum >= 170000 && !set.InRecovery {
			c.failover(ctx, slot)
		}
	}
	c.sampleRecords(ctx)
}

func (c *checker) capacity(ctx context.Context, maxSlots, maxSenders int, slot replication.Slot) {
	var slots, senders int
	err := c.conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_replication_slots)::int,
		(SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'walsender')::int`).Scan(&slots, &senders)
	if err != nil {
		c.fail("replication slots and WAL senders", err.Error(), "")
		return
	}
	detail := fmt.Sprintf("%d of max_replication_slots=%d used", slots, maxSlots)
	switch {
	case slot.Exists:
		c.pass("replication slots", detail+"; slot "+c.pg.Slot+" exists")
	case c.pg.SnapshotMode == replication.SnapshotNoData && slots < maxSlots:
		c.pass("replication slots", detail)
	case c.pg.SnapshotMode != replication.SnapshotNoData && slots+2 <= maxSlots:
		c.pass("replication slots", detail+"; the initial snapshot takes one more while it runs, as its pending marker")
	default:
		c.fail("replication slots", detail+"; not enough free for slot "+c.pg.Slot+" (and, with snapshot.mode="+c.pg.SnapshotMode+", its snapshot marker "+replication.SnapshotMarker(c.pg.Slot)+")",
			fmt.Sprintf("ALTER SYSTEM SET max_replication_slots = %d; -- then restart PostgreSQL (or drop an unused slot: SELECT pg_drop_replication_slot('name');)", maxSlots+2))
	}
	detail = fmt.Sprintf("%d of max_wal_senders=%d used", senders, maxSenders)
	if senders < maxSenders || slot.Active {
		c.pass("WAL senders", detail)
	} else {
		c.fail("WAL senders", detail+"; none free",
			fmt.Sprintf("ALTER SYSTEM SET max_wal_senders = %d; -- then restart PostgreSQL", maxSenders+2))
	}
}

func (c *checker) findTables(ctx context.Context) bool {
	tables, err := replication.IncludedTables(ctx, c.conn, c.pg)
	if err != nil {
		detail := "none matches table.include.list " + strconv.Quote(c.pg.TablesText)
		todo := "create the outbox table (outboxrelay sql prints its DDL), or set table.include.list to its schema.table name, e.g. public.outbox"
		switch {
		case c.pg.MessagesOnly:
			detail, todo = err.Error(), "make table.include.list match no table, or remove "+replication.KeyMessagesOnly
		case c.pg.Messages:
			todo += "; if the events are only logical decoding messages, set " + replication.KeyMessagesOnly + "=true"
		}
		c.fail("outbox tables", detail, todo)
		return false
	}
	c.tables = tables
	if len(tables) == 0 { // IncludedTables allows it only with outbox.messages.only
		c.pass("outbox tables", "none matches table.include.list "+strconv.Quote(c.pg.TablesText)+" and "+replication.KeyMessagesOnly+" is true: the events are logical decoding messages")
		return true
	}
	c.pass("outbox tables", strings.Join(tables, ", "))
	return true
}

func (c *checker) privileges(ctx context.Context) {
	user := postgres.QuoteIdent(c.pg.User)
	for _, t := range c.tables {
		qt := postgres.QuoteTables([]string{t})[0]
		var sel, del bool
		if err := c.conn.QueryRow(ctx, `SELECT has_table_privilege($1::regclass, 'SELECT'), has_table_privilege($1::regclass, 'DELETE')`, qt).Scan(&sel, &del); err != nil {
			c.fail("privileges on "+t, err.Error(), "")
			continue
		}
		if sel {
			c.pass("SELECT on "+t, "granted")
		} else {
			c.fail("SELECT on "+t, "not granted to "+c.pg.User+" (the initial snapshot reads the table)", fmt.Sprintf("GRANT SELECT ON %s TO %s;", qt, user))
		}
		if c.jan.Retention <= 0 {
			continue
		}
		if del {
			c.pass("DELETE on "+t, "granted (outbox.retention.ms is set)")
		} else {
			c.fail("DELETE on "+t, "not granted to "+c.pg.User+", and outbox.retention.ms asks the janitor to delete old rows",
				fmt.Sprintf("GRANT DELETE ON %s TO %s; -- or unset %s", qt, user, postgres.KeyRetention))
		}
	}
}

func (c *checker) publication(ctx context.Context) {
	cfg := c.pg
	name := "publication " + cfg.Publication
	qp := postgres.QuoteIdent(cfg.Publication)
	forTables := "FOR TABLE " + strings.Join(postgres.QuoteTables(c.tables), ", ")
	var exists, insert, update, del bool
	err := c.conn.QueryRow(ctx, `SELECT true, pubinsert, pubupdate, pubdelete FROM pg_publication WHERE pubname = $1`, cfg.Publication).Scan(&exists, &insert, &update, &del)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		c.fail(name, err.Error(), "")
		return
	}
	if !exists {
		if cfg.AutoCreate == replication.PublicationDisabled {
			c.fail(name, "does not exist (publication.autocreate.mode=disabled)",
				fmt.Sprintf("CREATE PUBLICATION %s %s;", qp, forTables))
			return
		}
		c.pass(name, "does not exist yet; the relay creates it"+c.onPrimary()+" (publication.autocreate.mode="+cfg.AutoCreate+"), which needs the CREATE privilege on the database and ownership of the tables (FOR ALL TABLES: a superuser)")
		return
	}
	rows, err := c.conn.Query(ctx, `SELECT schemaname || '.' || tablename FROM pg_publication_tables WHERE pubname = $1`, cfg.Publication)
	var published []string
	if err == nil {
		published, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		c.fail(name, err.Error(), "")
		return
	}
	in := map[string]bool{}
	for _, t := range published {
		in[t] = true
	}
	var missing []string
	for _, t := range c.tables {
		if !in[t] {
			missing = append(missing, t)
		}
	}
	switch {
	case len(missing) > 0 && cfg.AutoCreate == replication.PublicationFiltered:
		c.pass(name, "does not cover "+strings.Join(missing, ", ")+" yet; the relay adds it"+c.onPrimary()+" (publication.autocreate.mode=filtered)")
	case len(missing) > 0:
		c.fail(name, "does not cover "+strings.Join(missing, ", "),
			fmt.Sprintf("ALTER PUBLICATION %s ADD TABLE %s;", qp, strings.Join(postgres.QuoteTables(missing), ", ")))
	case !insert:
		c.fail(name, "does not publish inserts", fmt.Sprintf("ALTER PUBLICATION %s SET (publish = 'insert, update, delete, truncate');", qp))
	default:
		if len(c.tables) == 0 {
			c.pass(name, "exists (pgoutput needs one; messages need no table in it)")
			return
		}
		c.pass(name, "covers "+strings.Join(c.tables, ", "))
	}
}

// onPrimary is where, on a hot standby, the relay runs the publication's
// DDL: " on database.primary.hostname …", or "".
func (c *checker) onPrimary() string {
	if !c.onStandby {
		return ""
	}
	return " on database.primary.hostname " + c.pg.Primary().Where() + " (the standby replays it)"
}

// columnRule is a configured column and the types that work for it.
type columnRule struct {
	column, key, role string
	types             []string // pg_type.typname accepted; nil: any
	fixType           string   // the type to suggest
}

func (c *checker) columnRules() []columnRule {
	r := c.router
	key := func(opt string) string { return "transforms." + r.Alias + "." + opt }
	text := []string{"text", "varchar", "bpchar", "name"}
	rules := []columnRule{
		{r.EventIDField, key("table.field.event.id"), "event id", nil, "uuid"},
		{r.EventKeyField, key("table.field.event.key"), "key", nil, "text"},
		{r.PayloadField, key("table.field.event.payload"), "payload", []string{"jsonb", "json", "text", "varchar", "bytea"}, "jsonb"},
		{r.RouteByField, key("route.by.field"), "route", text, "text"},
	}
	if r.TimestampField != "" {
		rules = append(rules, columnRule{r.TimestampField, key("table.field.event.timestamp"), "timestamp", []string{"timestamptz", "timestamp", "int8", "int4"}, "timestamptz"})
	}
	for _, p := range r.Placements() {
		rule := columnRule{p.Column, key("table.fields.additional.placement"), p.Kind, nil, "text"}
		if p.Kind == "partition" {
			rule.types, rule.fixType = []string{"int2", "int4", "int8"}, "integer"
		}
		rules = append(rules, rule)
	}
	if c.jan.Retention > 0 {
		rules = append(rules, columnRule{c.jan.Column, postgres.KeyRetentionColumn, "retention", []string{"timestamptz", "timestamp", "date"}, "timestamptz"})
	}
	return rules
}

func (c *checker) columns(ctx context.Context, table string) {
	qt := postgres.QuoteTables([]string{table})[0]
	cols, err := postgres.Columns(ctx, c.conn, qt)
	if err != nil {
		c.fail("columns of "+table, err.Error(), "")
		return
	}
	var found, bad, fixes []string
	for _, r := range c.columnRules() {
		col, ok := cols[r.column]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%s (%s) is missing", r.column, r.role))
			fixes = append(fixes, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s; -- or set %s to an existing column", qt, postgres.QuoteIdent(r.column), r.fixType, r.key))
		case r.types != nil && !contains(r.types, col.TypeName):
			bad = append(bad, fmt.Sprintf("%s (%s) is %s", r.column, r.role, col.Type))
			fixes = append(fixes, fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s TYPE %s USING %s::%s; -- %s needs one of %s",
				qt, postgres.QuoteIdent(r.column), r.fixType, postgres.QuoteIdent(r.column), r.fixType, r.role, strings.Join(r.types, ", ")))
		default:
			found = append(found, fmt.Sprintf("%s %s (%s)", r.column, col.Type, r.role))
		}
	}
	if len(bad) > 0 {
		c.fail("columns of "+table, strings.Join(bad, "; "), strings.Join(fixes, "\n"))
		return
	}
	c.pass("columns of "+table, strings.Join(found, ", "))
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

// replicaIdentity: the relay publishes inserts only, but while the
// publication publishes updates or deletes PostgreSQL refuses UPDATE and
// DELETE on a table without a replica identity, including the janitor's.
func (c *checker) replicaIdentity(ctx context.Context, table string) {
	qt := postgres.QuoteTables([]string{table})[0]
	var ident string
	var hasPK, pubUpdDel bool
	err := c.conn.QueryRow(ctx, `SELECT c.relreplident::text,
		EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary),
		coalesce((SELECT pubupdate OR pubdelete FROM pg_publication WHERE pubname = $2), true)
		FROM pg_class c WHERE c.oid = $1::regclass`, qt, c.pg.Publication).Scan(&ident, &hasPK, &pubUpdDel)
	if err != nil {
		c.fail("replica identity of "+table, err.Error(), "")
		return
	}
	name := "replica identity of " + table
	switch {
	case ident == "f":
		c.pass(name, "full")
	case ident == "i":
		c.pass(name, "index")
	case ident == "d" && hasPK:
		c.pass(name, "default (primary key)")
	case !pubUpdDel:
		c.pass(name, "none, and the publication publishes neither updates nor deletes")
	default:
		what := "nothing"
		if ident == "d" {
			what = "default, but the table has no primary key"
		}
		c.fail(name, what+": UPDATE and DELETE on the table fail while the publication publishes them (the janitor deletes)",
			fmt.Sprintf("ALTER TABLE %s ADD PRIMARY KEY (%s); -- or ALTER TABLE %s REPLICA IDENTITY FULL;", qt, postgres.QuoteIdent(c.router.EventIDField), qt))
	}
}

func (c *checker) slot(ctx context.Context, s replication.Slot) {
	name := "replication slot " + c.pg.Slot
	if !s.Exists {
		c.pass(name, "does not exist (what run does about it: see start)")
		return
	}
	var lag *int64
	_ = c.conn.QueryRow(ctx, `SELECT ((CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END) - confirmed_flush_lsn)::bigint FROM pg_replication_slots WHERE slot_name = $1`, c.pg.Slot).Scan(&lag)
	detail := fmt.Sprintf("plugin %s, wal_status %s, confirmed_flush_lsn %s", s.Plugin, orDash(s.WALStatus), s.ConfirmedFlush)
	if lag != nil {
		detail += fmt.Sprintf(", lag %s", humanBytes(*lag))
	}
	if s.Active {
		var app string
		_ = c.conn.QueryRow(ctx, `SELECT coalesce(application_name, '') FROM pg_stat_activity WHERE pid = $1`, s.ActivePID).Scan(&app)
		detail += fmt.Sprintf(", active pid %d (%s)", s.ActivePID, orDash(app))
		if app == "outboxrelay" && s.Plugin == "pgoutput" && s.Database == c.pg.DBName && s.WALStatus != "lost" {
			c.st.relayActive = true
			c.pass(name, detail+": another outboxrelay streams it; this instance would stand by")
			return
		}
	}
	if err := replication.CheckSlot(s, c.pg); err != nil {
		c.fail(name, detail, strings.TrimPrefix(err.Error(), "preflight: "))
		return
	}
	var pending bool
	_ = c.conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_replication_slots WHERE slot_name = $1)`, replication.SnapshotMarker(c.pg.Slot)).Scan(&pending)
	if pending {
		detail += "; its initial snapshot did not finish (slot " + replication.SnapshotMarker(c.pg.Slot) + " marks it pending): the relay reads the outbox tables again when it starts"
	}
	if s.WALStatus == "unreserved" {
		c.fail(name, detail+": WAL it needs is about to be removed (max_slot_wal_keep_size)",
			"let the relay catch up now, or raise max_slot_wal_keep_size: ALTER SYSTEM SET max_slot_wal_keep_size = '50GB'; SELECT pg_reload_conf();")
		return
	}
	c.pass(name, detail)
}

// sampleRecords routes up to 1000 recent rows of each table, to learn the
// topics the relay will write and the size of its records. Rows the router
// refuses are counted, not failed: they may be old rows long dealt with.
func (c *checker) sampleRecords(ctx context.Context) {
	for _, table := range c.tables {
		schema, name, _ := strings.Cut(table, ".")
		qt := postgres.QuoteIdent(schema) + "." + postgres.QuoteIdent(name)
		order := ""
		if col := c.recentColumn(ctx, qt); col != "" {
			order = " ORDER BY " + postgres.QuoteIdent(col) + " DESC"
		}
		rr := c.conn.PgConn().ExecParams(ctx, "SELECT * FROM "+qt+order+" LIMIT 1000", nil, nil, nil, nil)
		fields := rr.FieldDescriptions()
		row := &capture.Row{Op: capture.OpRead, Table: table, Columns: make([]capture.Column, len(fields))}
		ev := &router.Event{Row: row, ProcessedAt: time.Now()}
		for i, f := range fields {
			row.Columns[i] = capture.Column{Name: f.Name, OID: f.DataTypeOID, Nullable: true}
		}
		var records []router.Record
		var err error
		for rr.NextRow() {
			for i, v := range rr.Values() {
				row.Columns[i].Text, row.Columns[i].Null = v, v == nil
			}
			if records, err = c.rt.Route(ev, records[:0]); err != nil {
				continue
			}
			for _, r := range records {
				size := len(r.Key) + len(r.Value)
				for _, h := range r.Headers {
					size += len(h.Key) + len(h.Value)
				}
				c.largest[r.Topic] = max(c.largest[r.Topic], size)
				c.keepSample(&r)
			}
		}
		if _, err := rr.Close(); err != nil {
			c.fail("recent rows of "+table, err.Error(), "GRANT SELECT ON "+qt+" TO "+postgres.QuoteIdent(c.pg.User)+";")
		}
	}
}

// recentColumn picks the column that orders rows by age: the retention
// column, else the router's timestamp column, when the table has it.
func (c *checker) recentColumn(ctx context.Context, qt string) string {
	for _, col := range []string{c.jan.Column, c.router.TimestampField} {
		if col == "" {
			continue
		}
		var ok bool
		if c.conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = $1::regclass AND attname = $2 AND NOT attisdropped)`, qt, col).Scan(&ok) == nil && ok {
			return col
		}
	}
	return ""
}

// kafkaChecks: Kafka answers, grants the idempotent producer its id, the
// topics of recent rows exist or can be created, and their records fit the
// brokers' and topics' size limits.
func (c *checker) kafkaChecks(ctx context.Context) {
	brokers := strings.Join(c.kafka.Brokers, ",")
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := c.prod.Ping(pctx)
	cancel()
	if err != nil {
		c.fail("Kafka reachable", brokers+": "+err.Error(),
			"check bootstrap.servers (or --kafka-brokers), security.protocol and sasl.*/ssl.* keys, and that the brokers run")
		return
	}
	c.pass("Kafka reachable", brokers)
	c.kafkaOK = true
	c.idempotence(ctx)

	brokerMax := 0
	if v, err := c.prod.BrokerConfig(ctx, "message.max.bytes"); err == nil {
		brokerMax, _ = strconv.Atoi(v)
	}
	if len(c.largest) == 0 {
		c.pass("topics", "no recent outbox rows to learn topics from; missing topics are "+c.creationPolicy())
		return
	}
	topics := make([]string, 0, len(c.largest))
	for t := range c.largest {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	const shown = 20
	for i, topic := range topics {
		if i == shown {
			c.pass("topics", fmt.Sprintf("%d more topics not checked", len(topics)-shown))
			break
		}
		// Once the budget is spent every later call fails alike: say so
		// once instead of blaming each remaining topic.
		if ctx.Err() != nil {
			c.fail("topics", fmt.Sprintf("%d of %d topics not checked: the checks ran out of time", len(topics)-i, len(topics)),
				"run check again with a longer --timeout; if Kafka is slow to answer, look at the broker first")
			break
		}
		c.topic(ctx, topic, brokerMax)
	}
}

func (c *checker) creationPolicy() string {
	switch {
	case c.kafka.TopicPartitions != 0 && c.kafka.TopicReplicationFactor != 0:
		return fmt.Sprintf("created by the relay (topic.creation.default.partitions=%d, replication.factor=%d)", c.kafka.TopicPartitions, c.kafka.TopicReplicationFactor)
	case c.kafka.AllowAutoCreateTopics:
		return "left to the broker's auto.create.topics.enable"
	}
	return "an error: create them before streaming"
}

func (c *checker) topic(ctx context.Context, topic string, brokerMax int) {
	name := "topic " + topic
	largest := c.largest[topic]
	parts, err := c.prod.TopicPartitions(ctx, topic)
	if err != nil {
		c.fail(name, err.Error(), "")
		return
	}
	limit, limitName := brokerMax, "the broker's message.max.bytes"
	detail := ""
	if parts > 0 {
		detail = fmt.Sprintf("exists, partitions: %d", parts)
		if v, err := c.prod.TopicConfig(ctx, topic, "max.message.bytes"); err == nil {
			if n, err := strconv.Atoi(v); err == nil {
				limit, limitName = n, "its max.message.bytes"
			}
		}
	} else {
		if err := c.prod.ValidateTopicCreation(ctx, topic); err != nil {
			if ctx.Err() != nil {
				c.fail(name, "no answer from Kafka in time: "+err.Error(), "")
				return
			}
			c.fail(name, "does not exist and cannot be created: "+err.Error(),
				fmt.Sprintf("kafka-topics.sh --bootstrap-server %s --create --topic %s --partitions 3 --replication-factor 3; -- or set topic.creation.default.partitions and topic.creation.default.replication.factor",
					strings.Join(c.kafka.Brokers, ","), topic))
			return
		}
		detail = "does not exist yet; " + c.creationPolicy()
	}
	// A record travels in a batch: the batch's ~100 bytes of framing count
	// against both limits.
	need := largest + 100
	detail += fmt.Sprintf("; largest recent record %s", humanBytes(int64(largest)))
	switch {
	case need > c.kafka.MaxRequestSize:
		c.fail(name, detail+fmt.Sprintf(", over max.request.size=%d", c.kafka.MaxRequestSize),
			fmt.Sprintf("set \"max.request.size\": \"%d\" (and the topic's max.message.bytes at least as large)", roundUpMiB(need)))
	case limit > 0 && need > limit:
		c.fail(name, detail+fmt.Sprintf(", over %s=%d", limitName, limit),
			fmt.Sprintf("kafka-configs.sh --bootstrap-server %s --alter --entity-type topics --entity-name %s --add-config max.message.bytes=%d",
				strings.Join(c.kafka.Brokers, ","), topic, roundUpMiB(need)))
	default:
		if limit > 0 {
			detail += fmt.Sprintf(" (limit %s)", humanBytes(int64(min(limit, c.kafka.MaxRequestSize))))
		}
		c.pass(name, detail)
	}
}

func roundUpMiB(n int) int { return (n + (1 << 20) - 1) &^ ((1 << 20) - 1) }

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
