package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/kafkaread"
)

// Env is what a run needs: the bed, a running Connect worker
// (scripts/debezium up) and a built outboxrelay binary.
type Env struct {
	PGURL      string // superuser DSN of the bed
	Brokers    string // bed's Kafka
	ConnectURL string // Connect worker's REST API
	RelayBin   string // outboxrelay binary
	Root       string // repository root: testdata/connector.json, sql/outbox.sql
	RunID      string // makes schema, slot, connector and topic names unique on a shared bed
	WorkDir    string // relay configs and logs
	Timeout    time.Duration
	Quiet      time.Duration // after the expected count, wait this long for extra records
	Registry   *Registry     // ConverterAgainstJSON's registry and decoder
	Logf       func(format string, args ...any)
}

// names are one case's identifiers on the shared bed.
type names struct {
	schema, pub, slotD, slotR, nsD, nsR string
}

func (e *Env) names(idx int) names {
	s := fmt.Sprintf("cf%s_%02d", e.RunID, idx)
	return names{schema: s, pub: s, slotD: s + "_dbz", slotR: s + "_rly", nsD: s + ".dbz.", nsR: s + ".rly."}
}

// Mode is what a run compares a case's outboxrelay records against.
type Mode int

const (
	// AgainstDebezium runs Debezium's connector on the Connect worker and
	// outboxrelay in logical mode, and compares with Compare.
	AgainstDebezium Mode = iota
	// PollAgainstLogical runs outboxrelay in logical and in poll mode on
	// one schema, and compares with ComparePoll (see poll.go); no Debezium.
	PollAgainstLogical
	// ConverterAgainstJSON runs outboxrelay with the case's converters and
	// with Env.Registry's converter on one schema, decodes the second's
	// records with Registry.Decode and compares with CompareConverter (see
	// converter.go); no Debezium.
	ConverterAgainstJSON
)

// pair is the two sides of one mode: a reference and the side under test,
// each writing into a topic namespace of its own.
type pair interface {
	// namespaces are the reference's and the tested side's topic prefixes.
	namespaces() (ref, got string)
	// start starts both sides on the prepared schema and waits until they
	// stream.
	start(ctx context.Context) error
	// restart stops both sides once each has records records and starts
	// them again (a case's restart step).
	restart(ctx context.Context, records int) error
	// failed returns why a side stopped, looking at the reference when
	// refShort and at the tested side when gotShort; nil while both run.
	failed(ctx context.Context, refShort, gotShort bool) error
	// stop stops what start started.
	stop()
}

// caseRun is one case on the bed: its names, the admin connection and the
// connector config both sides start from.
type caseRun struct {
	e     *Env
	c     *Case
	n     names
	admin *pgx.Conn
	base  map[string]any
}

func (m Mode) pair(r *caseRun) pair {
	switch m {
	case PollAgainstLogical:
		return &pollPair{caseRun: r}
	case ConverterAgainstJSON:
		return &converterPair{caseRun: r}
	}
	return &debeziumPair{caseRun: r}
}

// compare checks the tested side's records against the reference's.
func (m Mode) compare(c *Case, ref, got []Record) *Verdict {
	if m == PollAgainstLogical {
		return ComparePoll(c, ref, got)
	}
	return Compare(c, ref, got)
}

// Run runs one case through both sides of mode and compares the records.
// In the Verdict, Debezium counts the reference's records and Relay the
// tested side's.
func (e *Env) Run(ctx context.Context, c *Case, idx int, mode Mode) *Verdict {
	if mode == ConverterAgainstJSON {
		return e.runConverter(ctx, c, idx)
	}
	ref, got, err := e.run(ctx, c, e.names(idx), mode)
	if err != nil {
		return &Verdict{Case: c, Err: err, Debezium: len(ref), Relay: len(got)}
	}
	return mode.compare(c, ref, got)
}

// runConverter is Run in ConverterAgainstJSON: the registry side's records
// decoded, then compared as the reference's converters would write them.
func (e *Env) runConverter(ctx context.Context, c *Case, idx int) *Verdict {
	if e.Registry == nil {
		return &Verdict{Case: c, Err: errNoRegistry}
	}
	n := e.names(idx)
	base, err := e.connectorConfig(c, n)
	if err != nil {
		return &Verdict{Case: c, Err: err}
	}
	ref, got, err := e.run(ctx, c, n, ConverterAgainstJSON)
	if err == nil {
		if got, err = e.Registry.Decode(ctx, e.Registry.URL, got); err != nil {
			err = fmt.Errorf("decoding the %s records: %w", e.Registry.Class, err)
		}
	}
	if err != nil {
		return &Verdict{Case: c, Err: err, Debezium: len(ref), Relay: len(got)}
	}
	return CompareConverter(c, convertersOf(base), ref, got)
}

func (e *Env) run(ctx context.Context, c *Case, n names, mode Mode) (ref, got []Record, err error) {
	admin, err := pgx.Connect(ctx, e.PGURL)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	defer admin.Close(context.Background())
	defer e.cleanup(admin, n)

	if err := e.prepare(ctx, admin, c, n); err != nil {
		return nil, nil, err
	}
	base, err := e.connectorConfig(c, n)
	if err != nil {
		return nil, nil, err
	}
	p := mode.pair(&caseRun{e: e, c: c, n: n, admin: admin, base: base})
	defer p.stop()
	if err := p.start(ctx); err != nil {
		return nil, nil, err
	}
	if err := runSteps(ctx, e.PGURL, n.schema, c, p.restart); err != nil {
		return nil, nil, err
	}
	return e.collect(ctx, p, c.Records)
}

// debeziumPair is Debezium (the reference: one connector on the shared
// worker) against outboxrelay (its own process on its own slot).
type debeziumPair struct {
	*caseRun
	connector bool // created: stop deletes it
	relay     *relayProc
	restarts  int
}

func (p *debeziumPair) namespaces() (ref, got string) { return p.n.nsD, p.n.nsR }

func (p *debeziumPair) start(ctx context.Context) error {
	if err := p.e.createConnector(ctx, p.n.schema, withNamespace(p.base, p.n.slotD, p.n.nsD)); err != nil {
		return err
	}
	p.connector = true
	relay, err := p.e.startRelay(p.c, p.n, withNamespace(p.base, p.n.slotR, p.n.nsR), "")
	if err != nil {
		return err
	}
	p.relay = relay
	return p.e.waitStreaming(ctx, p.admin, []string{p.n.slotD, p.n.slotR}, p)
}

func (p *debeziumPair) failed(ctx context.Context, dbzShort, relayShort bool) error {
	if relayShort && p.relay != nil && p.relay.exited() {
		return fmt.Errorf("outboxrelay exited: %s", p.relay.tail())
	}
	if dbzShort {
		if trace := p.e.taskFailure(ctx, p.n.schema); trace != "" {
			//lint:ignore ST1005 Debezium is a name
			return fmt.Errorf("Debezium's task failed: %s", trace)
		}
	}
	return nil
}

// stop stops the relay of the last restart, then deletes the connector.
func (p *debeziumPair) stop() {
	if p.relay != nil {
		p.relay.stop()
	}
	if p.connector {
		p.e.deleteConnector(p.n.schema)
	}
}

// restart waits until each side has records records, stops both (the
// connector with Connect's stop API, which commits its offsets; outboxrelay
// with SIGTERM), starts them again and waits until both stream.
func (p *debeziumPair) restart(ctx context.Context, records int) error {
	e, c, n := p.e, p.c, p.n
	dbz, rly, err := e.collect(ctx, p, records)
	if err != nil {
		return err
	}
	if len(dbz) < records || len(rly) < records {
		return fmt.Errorf("%s: before the restart, Debezium has %d records and outboxrelay %d; want %d each", c.ID, len(dbz), len(rly), records)
	}
	if err := e.connectorState(ctx, n.schema, "stop", "STOPPED"); err != nil {
		return err
	}
	p.relay.stop()
	p.restarts++
	started, err := e.startRelay(c, n, withNamespace(p.base, n.slotR, n.nsR), fmt.Sprintf("-restart%d", p.restarts))
	if err != nil {
		return err // p.relay is the stopped one: stopping it again is harmless
	}
	p.relay = started
	if err := e.connectorState(ctx, n.schema, "resume", "RUNNING"); err != nil {
		return err
	}
	if err := e.waitStreaming(ctx, p.admin, []string{n.slotD, n.slotR}, p); err != nil {
		return err
	}
	e.Logf("%s: both sides stopped after %d records each and streaming again", c.ID, records)
	return nil
}

// connectorState sends PUT /connectors/name/<verb> and waits until the
// connector and its task are in state (STOPPED: no task left, its offsets
// committed).
func (e *Env) connectorState(ctx context.Context, name, verb, state string) error {
	if b, code, err := e.rest(ctx, http.MethodPut, "/connectors/"+name+"/"+verb, nil); err != nil || code/100 != 2 {
		return fmt.Errorf("%s connector %s: HTTP %d %s %v", verb, name, code, b, err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, code, err := e.rest(ctx, http.MethodGet, "/connectors/"+name+"/status", nil)
		var st struct {
			Connector struct{ State string }
			Tasks     []struct{ State string }
		}
		if err == nil && code == http.StatusOK && json.Unmarshal(b, &st) == nil && st.Connector.State == state &&
			(state == "STOPPED" && len(st.Tasks) == 0 || len(st.Tasks) > 0 && st.Tasks[0].State == state) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("connector %s not %s 60 s after %s: %s", name, state, verb, b)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// collect reads both sides' topics until each has records records and
// then Quiet more (for records that should not be there), or until
// Timeout; it stops early when either side failed.
func (e *Env) collect(ctx context.Context, p pair, records int) (ref, got []Record, err error) {
	refNS, gotNS := p.namespaces()
	deadline := time.Now().Add(e.Timeout)
	var quietUntil time.Time
	for {
		if ref, err = readNamespace(ctx, e.Brokers, refNS); err != nil {
			return nil, nil, err
		}
		if got, err = readNamespace(ctx, e.Brokers, gotNS); err != nil {
			return nil, nil, err
		}
		now := time.Now()
		if quietUntil.IsZero() && len(ref) >= records && len(got) >= records {
			quietUntil = now.Add(e.Quiet)
		}
		if !quietUntil.IsZero() && now.After(quietUntil) {
			break
		}
		if quietUntil.IsZero() && now.After(deadline) {
			break // Compare reports the missing records
		}
		if err := p.failed(ctx, true, true); err != nil {
			return ref, got, err
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	// A side that is short by the deadline: its failure, when it failed.
	if err := p.failed(ctx, len(ref) < records, len(got) < records); err != nil {
		return ref, got, err
	}
	return ref, got, nil
}

// prepare makes the case's schema: the fixture's outbox table (unless
// custom), the setup section, the relay role's grants and a publication
// of every table in the schema.
func (e *Env) prepare(ctx context.Context, admin *pgx.Conn, c *Case, n names) error {
	stmts := []string{"CREATE SCHEMA " + n.schema, "SET search_path = " + n.schema}
	if !c.CustomTable {
		ddl, err := os.ReadFile(filepath.Join(e.Root, "sql", "outbox.sql"))
		if err != nil {
			return err
		}
		stmts = append(stmts, strings.ReplaceAll(string(ddl), "public.outbox", n.schema+".outbox"))
	}
	if strings.TrimSpace(c.Setup) != "" {
		stmts = append(stmts, c.Setup)
	}
	stmts = append(stmts,
		"RESET search_path",
		fmt.Sprintf("GRANT USAGE ON SCHEMA %s TO debezium", n.schema),
		fmt.Sprintf("GRANT SELECT ON ALL TABLES IN SCHEMA %s TO debezium", n.schema),
	)
	for _, s := range stmts {
		if _, err := admin.PgConn().Exec(ctx, s).ReadAll(); err != nil {
			return fmt.Errorf("preparing %s: %s: %w", c.ID, firstLine(s), err)
		}
	}
	pub, err := publicationDDL(ctx, admin, n)
	if err == nil {
		_, err = admin.PgConn().Exec(ctx, pub).ReadAll()
	}
	if err != nil {
		return fmt.Errorf("preparing %s: %s: %w", c.ID, pub, err)
	}
	return nil
}

// publicationDDL is the CREATE PUBLICATION of every table in the case's
// schema: FOR TABLES IN SCHEMA from PostgreSQL 15 on, the schema's tables
// listed by name before (13 and 14 lack that form; every case makes its
// tables in its setup, so the list is complete).
func publicationDDL(ctx context.Context, admin *pgx.Conn, n names) (string, error) {
	var version int
	if err := admin.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		return "", fmt.Errorf("reading server_version_num: %w", err)
	}
	if version >= 150000 {
		return fmt.Sprintf("CREATE PUBLICATION %s FOR TABLES IN SCHEMA %s", n.pub, n.schema), nil
	}
	var tables string
	err := admin.QueryRow(ctx, `SELECT string_agg(format('%I.%I', schemaname, tablename), ', ' ORDER BY tablename)
		FROM pg_tables WHERE schemaname = $1`, n.schema).Scan(&tables)
	if err != nil {
		return "", fmt.Errorf("listing the tables of schema %s: %w", n.schema, err)
	}
	return fmt.Sprintf("CREATE PUBLICATION %s FOR TABLE %s", n.pub, tables), nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// connectorConfig is testdata/connector.json with the bed's address, the
// case's publication, table and topic.prefix, and the case's overrides.
func (e *Env) connectorConfig(c *Case, n names) (map[string]any, error) {
	raw, err := os.ReadFile(filepath.Join(e.Root, "testdata", "connector.json"))
	if err != nil {
		return nil, err
	}
	var doc struct {
		Config map[string]any `json:"config"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("testdata/connector.json: %w", err)
	}
	u, err := url.Parse(e.PGURL)
	if err != nil {
		return nil, err
	}
	cfg := doc.Config
	cfg["database.hostname"] = u.Hostname()
	cfg["database.port"] = u.Port()
	cfg["publication.name"] = n.pub
	cfg["table.include.list"] = n.schema + `\.outbox`
	cfg["topic.prefix"] = n.schema
	for _, o := range c.Config {
		if o.Delete {
			delete(cfg, o.Key)
			continue
		}
		cfg[o.Key] = strings.ReplaceAll(o.Value, "${schema}", n.schema)
	}
	return cfg, nil
}

// withNamespace gives one side its slot and prefixes every routed topic
// with ns through route.topic.replacement.
func withNamespace(base map[string]any, slot, ns string) map[string]any {
	cfg := make(map[string]any, len(base)+2)
	for k, v := range base {
		cfg[k] = v
	}
	cfg["slot.name"] = slot
	alias, _, _ := strings.Cut(fmt.Sprint(cfg["transforms"]), ",")
	for _, a := range strings.Split(fmt.Sprint(cfg["transforms"]), ",") {
		// The EventRouter's alias: a chain may put the message decoder first.
		if fmt.Sprint(cfg["transforms."+strings.TrimSpace(a)+".type"]) == "io.debezium.transforms.outbox.EventRouter" {
			alias = a
		}
	}
	key := "transforms." + strings.TrimSpace(alias) + ".route.topic.replacement"
	repl, ok := cfg[key]
	if !ok {
		repl = "outbox.event.${routedByValue}"
	}
	cfg[key] = ns + fmt.Sprint(repl)
	return cfg
}

// ---------------------------------------------------------------- Connect

func (e *Env) rest(ctx context.Context, method, path string, body any) ([]byte, int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.ConnectURL+path, rd)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return b, resp.StatusCode, err
}

func (e *Env) createConnector(ctx context.Context, name string, cfg map[string]any) error {
	b, code, err := e.rest(ctx, http.MethodPost, "/connectors", map[string]any{"name": name, "config": cfg})
	if err != nil {
		return fmt.Errorf("creating Debezium connector: %w", err)
	}
	if code/100 != 2 {
		return fmt.Errorf("creating Debezium connector: HTTP %d: %s", code, b)
	}
	return nil
}

func (e *Env) deleteConnector(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, code, err := e.rest(ctx, http.MethodDelete, "/connectors/"+name, nil); err != nil || code/100 != 2 {
		e.Logf("deleting connector %s: HTTP %d %v", name, code, err)
	}
}

// taskFailure returns the trace of a failed connector or task, or "".
func (e *Env) taskFailure(ctx context.Context, name string) string {
	b, code, err := e.rest(ctx, http.MethodGet, "/connectors/"+name+"/status", nil)
	if err != nil || code != http.StatusOK {
		return ""
	}
	var st struct {
		Connector struct{ State, Trace string }
		Tasks     []struct{ State, Trace string }
	}
	if json.Unmarshal(b, &st) != nil {
		return ""
	}
	if st.Connector.State == "FAILED" {
		return firstLines(st.Connector.Trace, 3)
	}
	for _, t := range st.Tasks {
		if t.State == "FAILED" {
			return firstLines(t.Trace, 3)
		}
	}
	return ""
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " | ")
}

// ------------------------------------------------------------ outboxrelay

type relayProc struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
}

// startRelay starts outboxrelay with cfg; tag tells apart the files of
// several relays of one case.
func (e *Env) startRelay(c *Case, n names, cfg map[string]any, tag string) (*relayProc, error) {
	b, err := json.MarshalIndent(map[string]any{"name": n.schema, "config": cfg}, "", "  ")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(e.WorkDir, n.schema+tag+".json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, err
	}
	p := &relayProc{logPath: filepath.Join(e.WorkDir, n.schema+tag+".log"), done: make(chan struct{})}
	logf, err := os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(e.RelayBin, "run", "--config", path, "--kafka-brokers", e.Brokers, "--log-format", "text")
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting outboxrelay: %w", err)
	}
	go func() {
		_ = p.cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *relayProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *relayProc) stop() {
	if !p.exited() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *relayProc) tail() string {
	b, _ := os.ReadFile(p.logPath)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, " | ")
}

// ------------------------------------------------------------- PostgreSQL

// waitStreaming waits until a walsender streams from each of slots, or a
// side of p failed.
func (e *Env) waitStreaming(ctx context.Context, admin *pgx.Conn, slots []string, p pair) error {
	deadline := time.Now().Add(90 * time.Second)
	for {
		var active int
		// Debezium creates its slot on one replication connection (the
		// slot is active then), closes it, reads its start offset and only
		// then starts streaming on another: rows written in between are
		// skipped as already seen. So wait for a walsender that streams.
		err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_replication_slots s JOIN pg_stat_replication r ON r.pid = s.active_pid
			WHERE s.slot_name = ANY($1) AND r.state = 'streaming'`, slots).Scan(&active)
		if err != nil {
			return err
		}
		if active == len(slots) {
			return nil
		}
		if err := p.failed(ctx, true, true); err != nil {
			return fmt.Errorf("before streaming: %w", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("slots %s not all streaming after 90 s", strings.Join(slots, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// runSteps runs the case's run section, each chunk on its session;
// restart runs the restart steps.
func runSteps(ctx context.Context, dsn, schema string, c *Case, restart func(context.Context, int) error) error {
	conns := make([]*pgx.Conn, c.Sessions())
	defer func() {
		for _, cn := range conns {
			if cn != nil {
				cn.Close(context.Background())
			}
		}
	}()
	for i := range conns {
		cn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		conns[i] = cn
		if _, err := cn.Exec(ctx, "SET search_path = "+schema); err != nil {
			return err
		}
	}
	for i, s := range c.Steps {
		if s.Restart > 0 {
			if err := restart(ctx, s.Restart); err != nil {
				return fmt.Errorf("%s: restart after %d records: %w", c.ID, s.Restart, err)
			}
			continue
		}
		if _, err := conns[s.Conn-1].PgConn().Exec(ctx, s.SQL).ReadAll(); err != nil {
			return fmt.Errorf("%s: run chunk %d (session %d): %s: %w", c.ID, i+1, s.Conn, firstLine(s.SQL), err)
		}
	}
	return nil
}

// cleanup removes everything the case made: connector slots (once their
// walsenders are gone), publication, schema and topics.
func (e *Env) cleanup(admin *pgx.Conn, n names) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for _, slot := range []string{n.slotD, n.slotR} {
		for {
			var active *bool
			err := admin.QueryRow(ctx, `SELECT active FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&active)
			if errors.Is(err, pgx.ErrNoRows) {
				break
			}
			if err != nil {
				e.Logf("clean-up: slot %s: %v", slot, err)
				break
			}
			if !*active {
				if _, err := admin.Exec(ctx, `SELECT pg_drop_replication_slot($1)`, slot); err != nil {
					e.Logf("clean-up: dropping slot %s: %v", slot, err)
				}
				break
			}
			if ctx.Err() != nil {
				e.Logf("clean-up: slot %s still active; left for scripts/debezium down", slot)
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for _, s := range []string{"DROP PUBLICATION IF EXISTS " + n.pub, "DROP SCHEMA IF EXISTS " + n.schema + " CASCADE"} {
		if _, err := admin.Exec(ctx, s); err != nil {
			e.Logf("clean-up: %s: %v", s, err)
		}
	}
	if err := deleteTopics(ctx, e.Brokers, n.schema+"."); err != nil {
		e.Logf("clean-up: topics %s*: %v", n.schema, err)
	}
}

// ------------------------------------------------------------------ Kafka

func topicsWithPrefix(brokers, prefix string) (map[string][]int, error) {
	conn, err := kafka.Dial("tcp", brokers)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ps, err := conn.ReadPartitions()
	if err != nil {
		return nil, err
	}
	out := map[string][]int{}
	for _, p := range ps {
		if strings.HasPrefix(p.Topic, prefix) {
			out[p.Topic] = append(out[p.Topic], p.ID)
		}
	}
	return out, nil
}

// readNamespace reads every record of every topic whose name starts with
// prefix, the prefix cut from the topic.
func readNamespace(ctx context.Context, brokers, prefix string) ([]Record, error) {
	topics, err := topicsWithPrefix(brokers, prefix)
	if err != nil {
		return nil, fmt.Errorf("listing topics: %w", err)
	}
	r := kafkaread.Reader{Broker: brokers}
	var out []Record
	for topic, parts := range topics {
		for _, p := range parts {
			msgs, err := r.Partition(ctx, topic, p, 0)
			if err != nil {
				return nil, err
			}
			for _, m := range msgs {
				rec := toRecord(m)
				rec.Topic = strings.TrimPrefix(topic, prefix)
				out = append(out, rec)
			}
		}
	}
	return out, nil
}

func toRecord(m kafka.Message) Record {
	r := Record{Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, Header{Key: h.Key, Value: h.Value})
	}
	return r
}

func deleteTopics(ctx context.Context, brokers, prefix string) error {
	topics, err := topicsWithPrefix(brokers, prefix)
	if err != nil || len(topics) == 0 {
		return err
	}
	var names []string
	for t := range topics {
		names = append(names, t)
	}
	client := &kafka.Client{Addr: kafka.TCP(brokers), Timeout: 30 * time.Second}
	_, err = client.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: names})
	return err
}
