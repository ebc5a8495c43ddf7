package main

import (
	"context"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	ddl "github.com/outboxrelay/outboxrelay/sql"

	"github.com/outboxrelay/outboxrelay/capture"
)

// identRE is what --table, --publication and slot names may contain: the
// benchmark splices them into SQL.
var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)

func checkIdent(flag, v string) error {
	if !identRE.MatchString(v) {
		return fmt.Errorf("%s %q: use a plain (optionally schema-qualified) identifier", flag, v)
	}
	return nil
}

// setupSQL creates the outbox table and a publication for it (--create),
// for a bed without them. The table is the project's own sql/outbox.sql
// (the fixture's columns) with the table name replaced.
func setupSQL(table, publication, grantTo string) ([]string, error) {
	b, err := fs.ReadFile(ddl.Files, "outbox.sql")
	if err != nil {
		return nil, fmt.Errorf("reading the outbox DDL: %w", err)
	}
	const fixtureTable = "public.outbox"
	if !strings.Contains(string(b), fixtureTable) {
		return nil, fmt.Errorf("sql/outbox.sql no longer creates %s", fixtureTable)
	}
	out := []string{strings.ReplaceAll(string(b), fixtureTable, table)}
	if publication != "" {
		out = append(out, fmt.Sprintf(`DO $$BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = '%s') THEN
    CREATE PUBLICATION %s FOR TABLE %s;
  END IF; END$$`, publication, publication, table))
	}
	if grantTo != "" {
		out = append(out, fmt.Sprintf(`GRANT SELECT ON %s TO %s`, table, grantTo))
	}
	return out, nil
}

func execAll(ctx context.Context, conn *pgx.Conn, stmts []string) error {
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("running %q: %w", firstLine(s), err)
		}
	}
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// ensureSlot creates a pgoutput logical slot unless it exists, so that the
// backlog inserted next is retained for the relay. It reports whether it
// created the slot.
func ensureSlot(ctx context.Context, conn *pgx.Conn, slot string) (bool, error) {
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = $1)`, slot).Scan(&exists); err != nil {
		return false, fmt.Errorf("looking up slot %s: %w", slot, err)
	}
	if exists {
		return false, nil
	}
	if _, err := conn.Exec(ctx, `SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, slot); err != nil {
		return false, fmt.Errorf("creating slot %s: %w", slot, err)
	}
	return true, nil
}

func dropSlot(ctx context.Context, conn *pgx.Conn, slot string) error {
	_, err := conn.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active`, slot)
	if err != nil {
		return fmt.Errorf("dropping slot %s: %w", slot, err)
	}
	return nil
}

// slotState reads the slot's confirmed_flush_lsn and whether a walsender
// streams from it.
func slotState(ctx context.Context, conn *pgx.Conn, slot string) (capture.LSN, bool, error) {
	var lsn string
	var active bool
	err := conn.QueryRow(ctx, `SELECT coalesce(confirmed_flush_lsn::text, '0/0'), active FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&lsn, &active)
	if err != nil {
		return 0, false, fmt.Errorf("reading slot %s: %w", slot, err)
	}
	l, err := capture.ParseLSN(lsn)
	if err != nil {
		return 0, false, fmt.Errorf("parsing confirmed_flush_lsn %q of slot %s: %w", lsn, slot, err)
	}
	return l, active, nil
}

// waitConfirmed polls the slot until its confirmed_flush_lsn reaches target
// and returns when it did; seen holds the latest value for progress lines.
func waitConfirmed(ctx context.Context, conn *pgx.Conn, slot string, target capture.LSN, seen *atomic.Uint64) (time.Time, capture.LSN, error) {
	for {
		lsn, _, err := slotState(ctx, conn, slot)
		if err != nil {
			return time.Time{}, 0, err
		}
		seen.Store(uint64(lsn))
		if lsn >= target {
			return time.Now(), lsn, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, lsn, fmt.Errorf("waiting for slot %s to confirm %s (at %s): %w", slot, target, lsn, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitActive waits until a walsender streams from slot.
func waitActive(ctx context.Context, conn *pgx.Conn, slot string) error {
	if slot == "" {
		return nil
	}
	for {
		var active bool
		err := conn.QueryRow(ctx, `SELECT coalesce((SELECT active FROM pg_replication_slots WHERE slot_name = $1), false)`, slot).Scan(&active)
		if err != nil {
			return fmt.Errorf("reading slot %s: %w", slot, err)
		}
		if active {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for a walsender on slot %s: %w", slot, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// findRecvlogical returns --pg-recvlogical, pg_recvlogical on PATH, or the
// newest /usr/lib/postgresql/*/bin/pg_recvlogical.
func findRecvlogical(explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	if p, err := exec.LookPath("pg_recvlogical"); err == nil {
		return p, nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_recvlogical")
	if len(found) == 0 {
		return "", fmt.Errorf("pg_recvlogical not found on PATH or under /usr/lib/postgresql/*/bin; pass --pg-recvlogical")
	}
	slices.SortFunc(found, func(a, b string) int { return versionOf(a) - versionOf(b) })
	return found[len(found)-1], nil
}

func versionOf(path string) int {
	var v int
	fmt.Sscanf(filepath.Base(filepath.Dir(filepath.Dir(path))), "%d", &v)
	return v
}

// Recvlogical is the floor of anything that reads the same stream:
// pg_recvlogical receiving it from its own pgoutput slot and writing it to
// /dev/null. On a backlog it drains the backlog first (timed from start to
// its exit at endpos); on a steady run it streams beside the relay for the
// whole run (ThroughputEPS is then 0: the rate is the input).
type Recvlogical struct {
	Slot                 string  `json:"slot"`
	Seconds              float64 `json:"seconds"`
	ThroughputEPS        float64 `json:"throughput_eps,omitempty"`
	EndLSN               string  `json:"endpos,omitempty"`
	CPUSeconds           float64 `json:"cpu_seconds"`
	CPUSecondsPerMillion float64 `json:"cpu_seconds_per_million,omitempty"`
}

// withSSLMode is dsn (a URL or key=value DSN) with sslmode set to mode;
// dsn itself when mode is empty. The URL's query is edited as text, so
// its other parameters reach libpq as written.
func withSSLMode(dsn, mode string) string {
	if mode == "" {
		return dsn
	}
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return dsn + " sslmode=" + mode // the last of a key given twice wins
	}
	base, query, _ := strings.Cut(dsn, "?")
	params := []string{}
	for _, kv := range strings.Split(query, "&") {
		if kv != "" && !strings.HasPrefix(kv, "sslmode=") {
			params = append(params, kv)
		}
	}
	return base + "?" + strings.Join(append(params, "sslmode="+url.QueryEscape(mode)), "&")
}

func recvlogicalCmd(ctx context.Context, bin, pgURL, slot, publication string, endpos capture.LSN) *exec.Cmd {
	args := []string{"-d", pgURL, "--slot", slot, "--start",
		"-o", "proto_version=1", "-o", "publication_names=" + publication, "--no-loop", "-f", "/dev/null"}
	if endpos != 0 {
		args = append(args, "--endpos", endpos.String())
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stderr = os.Stderr
	return cmd
}

// runRecvlogical times pg_recvlogical from start to its exit at endpos and
// returns its user + system CPU.
func runRecvlogical(ctx context.Context, bin, pgURL, slot, publication string, endpos capture.LSN) (time.Duration, time.Duration, error) {
	cmd := recvlogicalCmd(ctx, bin, pgURL, slot, publication, endpos)
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("running pg_recvlogical --slot %s --endpos %s: %w", slot, endpos, err)
	}
	return time.Since(t0), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// streamingRecvlogical is pg_recvlogical streaming until stop.
type streamingRecvlogical struct {
	cmd     *exec.Cmd
	started time.Time
}

func startRecvlogical(ctx context.Context, bin, pgURL, slot, publication string) (*streamingRecvlogical, error) {
	cmd := recvlogicalCmd(ctx, bin, pgURL, slot, publication, 0)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting pg_recvlogical --slot %s: %w", slot, err)
	}
	return &streamingRecvlogical{cmd: cmd, started: time.Now()}, nil
}

// stop ends pg_recvlogical with SIGINT (its orderly stop) and returns how
// long it ran and its user + system CPU.
func (r *streamingRecvlogical) stop() (time.Duration, time.Duration, error) {
	_ = r.cmd.Process.Signal(os.Interrupt)
	err := r.cmd.Wait()
	d := time.Since(r.started)
	if r.cmd.ProcessState == nil {
		return d, 0, fmt.Errorf("stopping pg_recvlogical: %w", err)
	}
	return d, r.cmd.ProcessState.UserTime() + r.cmd.ProcessState.SystemTime(), nil
}
