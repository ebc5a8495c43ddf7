package replication

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The initial snapshot of a new slot is done only when Kafka acknowledged
// every row of it. Until then a marker says it is pending: a physical
// replication slot named after the logical one. It is created before the
// logical slot and dropped once the snapshot is acknowledged, so a relay
// that finds the logical slot and the marker knows the snapshot did not
// finish (a crash, a Kafka outage) and reads the tables again. A physical
// slot made without reserving WAL holds no WAL and needs no privilege
// beyond REPLICATION; it is visible to operators in pg_replication_slots.

// markerSuffix ends the name of the snapshot marker slot.
const markerSuffix = "_snapshot_pending"

// maxSlotName is PostgreSQL's limit on a slot name (NAMEDATALEN - 1).
const maxSlotName = 63

// SnapshotMarker is the name of the physical slot marking slot's initial
// snapshot as pending. Names too long for the suffix are shortened and
// keep a hash of the whole name, so two long names do not share a marker.
func SnapshotMarker(slot string) string {
	if len(slot)+len(markerSuffix) <= maxSlotName {
		return slot + markerSuffix
	}
	h := fnv.New32a()
	h.Write([]byte(slot))
	keep := maxSlotName - len(markerSuffix) - 9 // "_" + 8 hex digits
	return fmt.Sprintf("%s_%08x%s", slot[:keep], h.Sum32(), markerSuffix)
}

// snapshotPending reports whether the marker of slot exists. A logical
// slot of that name is not ours: an error says so instead of guessing.
func snapshotPending(ctx context.Context, conn *pgx.Conn, slot string) (bool, error) {
	marker := SnapshotMarker(slot)
	var typ string
	err := conn.QueryRow(ctx, `SELECT slot_type FROM pg_replication_slots WHERE slot_name = $1`, marker).Scan(&typ)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the snapshot marker slot %q: %w", marker, err)
	}
	if typ != "physical" {
		return false, fmt.Errorf("%w: slot %q is a %s slot, not the physical slot outboxrelay uses to mark the initial snapshot of %q as pending: rename slot.name or drop it", ErrSlotIncompat, marker, typ, slot)
	}
	return true, nil
}

// markSnapshotPending creates the marker; one that exists already is kept.
func markSnapshotPending(ctx context.Context, conn *pgx.Conn, slot string) error {
	marker := SnapshotMarker(slot)
	_, err := conn.Exec(ctx, `SELECT pg_create_physical_replication_slot($1)`, marker)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42710" { // duplicate_object
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating the snapshot marker slot %q: %w; a new slot with an initial snapshot needs two free replication slots (the slot and, while the snapshot runs, its marker): raise max_replication_slots or drop an unused slot, or set snapshot.mode=no_data", marker, err)
	}
	return nil
}

// markSnapshotDone drops the marker; one that is gone already is fine.
func markSnapshotDone(ctx context.Context, conn *pgx.Conn, slot string) error {
	marker := SnapshotMarker(slot)
	_, err := conn.Exec(ctx, `SELECT pg_drop_replication_slot($1)`, marker)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42704" { // undefined_object
		return nil
	}
	if err != nil {
		return fmt.Errorf("dropping the snapshot marker slot %q after the snapshot: %w", marker, err)
	}
	return nil
}
