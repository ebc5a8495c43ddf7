package replication

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/postgres"
)

// JanitorRule is logical replication's rule for the clean-up janitor
// (postgres.Janitor): a row older than the retention (by
// outbox.retention.column) goes only once the slot confirmed past it.
//
// # The safety rule: never delete a row the slot has not confirmed
//
// Each batch runs in a REPEATABLE READ transaction. Its first statement
// takes the transaction's snapshot S and then reads W =
// pg_current_wal_insert_lsn(). A row is visible in S only if its inserting
// transaction had committed before S was taken, and PostgreSQL inserts a
// commit record into the WAL before it makes the transaction visible; so
// the commit record of every row S sees ends at or before W. The batch then
// waits until the slot's confirmed_flush_lsn (read live from
// pg_replication_slots, not from the snapshot) reaches W: by invariant 1
// every record of every transaction committed up to there is acknowledged
// by Kafka. Only then does it DELETE, and a DELETE in that transaction sees
// only S's rows. created_at alone would not do: it is the inserting
// transaction's start time, so a long transaction can commit, unconfirmed,
// a row that already looks old.
//
// On a hot standby (database.primary.hostname set) the batch runs on the
// primary and the slot is read on the standby: the standby's slot decodes
// the primary's WAL, so its confirmed_flush_lsn is a position of the same
// WAL as W, and the rule holds unchanged.
//
// A row updated after S (an application marking it sent) makes the DELETE
// fail with a serialization error; the batch is rolled back and tried again
// next round. The snapshot is held for at most ConfirmWait, which bounds
// how long the janitor holds back VACUUM.
func JanitorRule(cfg *Config, j postgres.JanitorConfig) postgres.JanitorRule {
	return postgres.JanitorRule{Rows: "confirmed", Column: j.Column, Key: postgres.KeyRetentionColumn,
		Ready: func(ctx context.Context, tx pgx.Tx, source postgres.Querier) error {
			return waitSnapshotConfirmed(ctx, tx, source, cfg.Slot, j.ConfirmWait)
		}}
}

// ErrNotConfirmed: the slot did not confirm past the batch's snapshot in
// time; nothing was deleted.
var ErrNotConfirmed = errors.New("the slot has not confirmed past the batch's snapshot yet")

// waitSnapshotConfirmed reads the WAL insert position in tx's snapshot
// and waits, at most wait, until the slot (on source: tx's server, or the
// hot standby decoding tx's primary's WAL, whose positions are the
// primary's) confirmed past it.
func waitSnapshotConfirmed(ctx context.Context, tx pgx.Tx, source postgres.Querier, slot string, wait time.Duration) error {
	var text string
	if err := tx.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&text); err != nil {
		return fmt.Errorf("janitor: reading the WAL insert position: %w", err)
	}
	w, err := capture.ParseLSN(text)
	if err != nil {
		return fmt.Errorf("janitor: WAL insert position %q: %w", text, err)
	}
	return waitConfirmed(ctx, source, slot, w, wait)
}

// waitConfirmed polls the slot until its confirmed_flush_lsn reaches w.
func waitConfirmed(ctx context.Context, source postgres.Querier, slot string, w capture.LSN, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		var text *string
		err := source.QueryRow(ctx, `SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&text)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && text == nil) {
			return fmt.Errorf("janitor: slot %q does not exist or has no confirmed position: %w", slot, ErrNotConfirmed)
		}
		if err != nil {
			return fmt.Errorf("janitor: reading slot %q: %w", slot, err)
		}
		c, err := capture.ParseLSN(*text)
		if err != nil {
			return fmt.Errorf("janitor: slot %q confirmed_flush_lsn %q: %w", slot, *text, err)
		}
		if c >= w {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("janitor: slot %q confirmed %s, the batch needs %s: %w", slot, c, w, ErrNotConfirmed)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
