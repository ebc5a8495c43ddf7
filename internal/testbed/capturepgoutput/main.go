// Command capturepgoutput records real pgoutput frames from the bed's
// PostgreSQL for the decoder's fuzz corpus and tests: it runs a scripted
// workload that makes the server send every message type protocol version
// 1 has (Begin, Commit, Origin, Relation, Type, Insert, Update with key and
// full old tuples, Delete, Truncate, logical Message, TOAST-unchanged
// values), and writes each WALData payload to its own file.
//
//	eval "$(scripts/devenv up)"
//	go run ./internal/testbed/capturepgoutput -out testdata/pgoutput
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

func main() {
	out := flag.String("out", "testdata/pgoutput", "directory for the frames")
	flag.Parse()
	dsn := os.Getenv("OUTBOXRELAY_TEST_PG_URL")
	if dsn == "" {
		fmt.Fprintln(os.Stderr, "capturepgoutput: OUTBOXRELAY_TEST_PG_URL is unset; run eval \"$(scripts/devenv up)\" first")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := capture(ctx, dsn, *out); err != nil {
		fmt.Fprintln(os.Stderr, "capturepgoutput:", err)
		os.Exit(1)
	}
}

// workload is the SQL that produces the frames, in order.
func workload() []string {
	return []string{
		`INSERT INTO cap.outbox (aggregatetype, aggregateid, type, payload, mood, amount, flag, blob)
	 VALUES ('orders', '9191642889', 'paid', '{"orderId": 9191642889, "payableAmount": 199.00}', 'happy', 199.00, true, '\xdeadbeef')`,
		`BEGIN; INSERT INTO cap.outbox (aggregatetype, aggregateid, type, payload) VALUES ('payments', 'pay-889900', 'PaymentSucceeded', '{"paymentId": "pay-889900", "channel": "wallet"}'), ('ünïcode', 'ключ', 'e', '{"a": [1, 2.50, null, []]}'); COMMIT`,
		`INSERT INTO cap.outbox (aggregatetype, aggregateid, type, payload) VALUES ('big', 'b', 'e', jsonb_build_object('blob', (SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 1000))))`,
		`UPDATE cap.outbox SET type = 'updated' WHERE aggregatetype = 'big'`,  // the TOASTed payload is sent as unchanged ('u')
		`UPDATE cap.outbox SET id = id + 1000 WHERE aggregatetype = 'orders'`, // key change: old key tuple ('K')
		`UPDATE cap.full_identity SET note = 'changed'`,                       // REPLICA IDENTITY FULL: old tuple ('O')
		`DELETE FROM cap.outbox WHERE aggregatetype = 'payments'`,
		`DELETE FROM cap.full_identity`,
		`SELECT pg_logical_emit_message(true, 'outboxrelay', 'transactional message')`,
		`SELECT pg_logical_emit_message(false, 'outboxrelay', 'non-transactional message')`,
		`TRUNCATE cap.full_identity, cap.outbox RESTART IDENTITY CASCADE`,
		// A transaction replayed from another node carries an origin; the
		// session setup must be its own statement, so the commit sees it.
		`SELECT pg_replication_origin_session_setup('cap_origin')`,
		`INSERT INTO cap.outbox (aggregatetype, aggregateid, type, payload) VALUES ('origin', 'o', 'e', '{}')`,
		`SELECT pg_replication_origin_session_reset()`,
		`ALTER TABLE cap.outbox ADD COLUMN extra text; INSERT INTO cap.outbox (aggregatetype, aggregateid, type, payload, extra) VALUES ('altered', 'a', 'e', '{}', 'new column')`,
	}
}

// setupSQL makes the schema, publication and origin the workload uses,
// after dropping what an earlier run left.
func setupSQL() []string {
	return []string{
		`DROP SCHEMA IF EXISTS cap CASCADE`,
		`DROP PUBLICATION IF EXISTS cap`,
		`SELECT pg_drop_replication_slot('cap') FROM pg_replication_slots WHERE slot_name = 'cap'`,
		`SELECT pg_replication_origin_drop('cap_origin') FROM pg_replication_origin WHERE roname = 'cap_origin'`,
		`CREATE SCHEMA cap`,
		`CREATE TYPE cap.mood AS ENUM ('happy', 'sad')`,
		`CREATE TABLE cap.outbox (id bigserial PRIMARY KEY, aggregatetype text NOT NULL, aggregateid text NOT NULL, type text NOT NULL,
			payload jsonb, mood cap.mood, amount numeric(12,2), flag boolean, blob bytea)`,
		`CREATE TABLE cap.full_identity (id int PRIMARY KEY, note text)`,
		`ALTER TABLE cap.full_identity REPLICA IDENTITY FULL`,
		`INSERT INTO cap.full_identity VALUES (1, 'one'), (2, 'two')`,
		`CREATE PUBLICATION cap FOR TABLE cap.outbox, cap.full_identity`,
		`SELECT pg_replication_origin_create('cap_origin')`,
	}
}

// cleanupSQL drops what setupSQL and the slot made.
func cleanupSQL() []string {
	return []string{
		`SELECT pg_drop_replication_slot('cap') FROM pg_replication_slots WHERE slot_name = 'cap'`,
		`DROP PUBLICATION IF EXISTS cap`, `DROP SCHEMA IF EXISTS cap CASCADE`,
		`SELECT pg_replication_origin_drop('cap_origin')`,
	}
}

func capture(ctx context.Context, dsn, out string) error {
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	defer admin.Close(context.Background())
	if err := execAll(ctx, admin, setupSQL()); err != nil {
		return err
	}
	defer func() {
		for _, s := range cleanupSQL() {
			_, _ = admin.Exec(context.Background(), s)
		}
	}()

	repl, err := pgconn.Connect(ctx, dsn+"&replication=database")
	if err != nil {
		return fmt.Errorf("replication connection: %w", err)
	}
	end, err := streamWorkload(ctx, admin, repl)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	n, err := writeFrames(ctx, repl, out, end)
	if err != nil {
		return err
	}
	if n == 0 {
		return errors.New("no frames received")
	}
	fmt.Printf("wrote %d frames to %s\n", n, out)
	return nil
}

func execAll(ctx context.Context, conn *pgx.Conn, stmts []string) error {
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// streamWorkload creates the slot, runs the workload and starts streaming
// from the slot's start; it returns the WAL position after the workload.
func streamWorkload(ctx context.Context, admin *pgx.Conn, repl *pgconn.PgConn) (pglogrepl.LSN, error) {
	slot, err := pglogrepl.CreateReplicationSlot(ctx, repl, "cap", "pgoutput", pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication})
	if err != nil {
		return 0, fmt.Errorf("creating slot: %w", err)
	}
	start, _ := pglogrepl.ParseLSN(slot.ConsistentPoint)
	if err := execAll(ctx, admin, workload()); err != nil {
		return 0, err
	}
	var end pglogrepl.LSN
	if err := admin.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan((*lsnText)(&end)); err != nil {
		return 0, err
	}
	err = pglogrepl.StartReplication(ctx, repl, "cap", start, pglogrepl.StartReplicationOptions{
		PluginArgs: []string{"proto_version '1'", "publication_names 'cap'", "messages 'true'"},
	})
	if err != nil {
		return 0, fmt.Errorf("starting replication: %w", err)
	}
	return end, nil
}

// writeFrames writes each WALData payload to out, numbered, until a frame
// starts at or past end or the server has sent nothing for 3 s; it
// returns how many it wrote.
func writeFrames(ctx context.Context, repl *pgconn.PgConn, out string, end pglogrepl.LSN) (int, error) {
	n := 0
	for {
		rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
		msg, err := repl.ReceiveMessage(rctx)
		rcancel()
		if err != nil {
			if pgconn.Timeout(err) {
				return n, nil // caught up: the server has nothing more to send
			}
			return n, fmt.Errorf("receiving: %w", err)
		}
		cd, ok := msg.(*pgproto3.CopyData)
		if !ok || len(cd.Data) == 0 || cd.Data[0] != pglogrepl.XLogDataByteID {
			continue
		}
		xld, err := pglogrepl.ParseXLogData(cd.Data[1:])
		if err != nil {
			return n, err
		}
		n++
		name := filepath.Join(out, fmt.Sprintf("%03d-%c.bin", n, xld.WALData[0]))
		if err := os.WriteFile(name, xld.WALData, 0o644); err != nil {
			return n, err
		}
		if xld.WALStart >= end {
			return n, nil
		}
	}
}

// lsnText scans an LSN from its text form.
type lsnText pglogrepl.LSN

func (l *lsnText) Scan(src any) error {
	s, ok := src.(string)
	if !ok {
		return fmt.Errorf("lsn: unexpected %T", src)
	}
	v, err := pglogrepl.ParseLSN(s)
	*l = lsnText(v)
	return err
}
