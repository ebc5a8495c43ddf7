package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/postgres"
)

// createdSlot is what CREATE_REPLICATION_SLOT returned.
type createdSlot struct {
	ConsistentPoint capture.LSN
	SnapshotName    string // set only when a snapshot was exported
}

// createSlot creates the permanent logical slot on the replication
// connection. With export, the slot's snapshot is exported so the initial
// snapshot reads exactly the rows committed before the consistent point; it
// stays valid only until the next command on this connection, so the caller
// must finish importing it before START_REPLICATION.
func createSlot(ctx context.Context, conn *pgconn.PgConn, name string, export, failover bool, log *slog.Logger) (createdSlot, error) {
	var res pglogrepl.CreateReplicationSlotResult
	var err error
	if failover {
		// PostgreSQL 17's option list; pglogrepl writes the old syntax only.
		snapshot := "nothing"
		if export {
			snapshot = "export"
		}
		res, err = pglogrepl.ParseCreateReplicationSlot(conn.Exec(ctx,
			fmt.Sprintf("CREATE_REPLICATION_SLOT %s LOGICAL pgoutput (SNAPSHOT '%s', FAILOVER true)", name, snapshot)))
	} else {
		action := "NOEXPORT_SNAPSHOT"
		if export {
			action = "EXPORT_SNAPSHOT"
		}
		res, err = pglogrepl.CreateReplicationSlot(ctx, conn, name, "pgoutput", pglogrepl.CreateReplicationSlotOptions{
			Mode:           pglogrepl.LogicalReplication,
			SnapshotAction: action,
		})
	}
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42710" { // duplicate_object: another instance won the race
			return createdSlot{}, fmt.Errorf("creating slot %q: %w: it was created concurrently by another connection; is a second relay running with the same slot.name?", name, ErrSlotInUse)
		}
		if errors.As(err, &pgErr) && pgErr.Code == "53400" { // configuration_limit_exceeded
			return createdSlot{}, fmt.Errorf("creating slot %q: %w; raise max_replication_slots (a new slot with an initial snapshot needs two free: the slot and its snapshot marker) or drop an unused slot", name, err)
		}
		return createdSlot{}, fmt.Errorf("creating slot %q: %w", name, err)
	}
	lsn, err := capture.ParseLSN(res.ConsistentPoint)
	if err != nil {
		return createdSlot{}, fmt.Errorf("creating slot %q: consistent point %q: %w", name, res.ConsistentPoint, err)
	}
	log.Info("replication slot created", "slot", name, "consistent_point", lsn.String(), "snapshot", res.SnapshotName, "failover", failover)
	return createdSlot{ConsistentPoint: lsn, SnapshotName: res.SnapshotName}, nil
}

// startReplication sends START_REPLICATION with pgoutput protocol version 1.
// Logical decoding messages are requested only when they are routed
// (cfg.Messages; PostgreSQL 14+, which preflight checks): otherwise the
// walsender need not send them at all.
func startReplication(ctx context.Context, conn *pgconn.PgConn, cfg *Config, serverVersion int, from capture.LSN) error {
	args, err := pluginArgs(cfg, serverVersion)
	if err != nil {
		return err
	}
	err = pglogrepl.StartReplication(ctx, conn, cfg.Slot, pglogrepl.LSN(from), pglogrepl.StartReplicationOptions{
		Mode:       pglogrepl.LogicalReplication,
		PluginArgs: args,
	})
	if err != nil {
		return fmt.Errorf("starting replication on slot %q at %s: %w", cfg.Slot, from, err)
	}
	return nil
}

// pluginArgs are pgoutput's START_REPLICATION options. pgoutput splits
// publication_names as an identifier list (SplitIdentifierString): a bare
// name is folded to lower case, so the name goes quoted as CREATE
// PUBLICATION wrote it (postgres.QuoteIdent), and a mixed-case publication
// is the one created. Messages on a
// server before 14 are an error, never a silent omission: preflight stops
// that first, but no path may lose the events quietly.
func pluginArgs(cfg *Config, serverVersion int) ([]string, error) {
	args := []string{"proto_version '1'", "publication_names '" + escapeLiteral(postgres.QuoteIdent(cfg.Publication)) + "'"}
	if !cfg.Messages {
		return args, nil
	}
	if serverVersion < 140000 {
		return nil, fmt.Errorf("starting replication on slot %q: %w: server_version_num is %d, and pgoutput sends logical decoding messages from PostgreSQL 14 on; upgrade, or remove %s from transforms",
			cfg.Slot, ErrServerVersion, serverVersion, "DecodeLogicalDecodingMessageContent")
	}
	return append(args, "messages 'true'"), nil
}

// enableFailover turns failover on for an existing slot (slot.failover), so
// that standbys synchronize it from now on.
func enableFailover(ctx context.Context, conn *pgconn.PgConn, name string, log *slog.Logger) error {
	if _, err := conn.Exec(ctx, fmt.Sprintf("ALTER_REPLICATION_SLOT %s (FAILOVER true)", name)).ReadAll(); err != nil {
		return fmt.Errorf("enabling failover on slot %q (slot.failover): %w", name, err)
	}
	log.Info("failover enabled on the replication slot (slot.failover)", "slot", name)
	return nil
}

// dropSlot drops the slot (slot.drop.on.stop, on an orderly stop only).
func dropSlot(ctx context.Context, conn *pgconn.PgConn, name string) error {
	if err := pglogrepl.DropReplicationSlot(ctx, conn, name, pglogrepl.DropReplicationSlotOptions{}); err != nil {
		return fmt.Errorf("dropping slot %q (slot.drop.on.stop): %w", name, err)
	}
	return nil
}

func escapeLiteral(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, '\'')
		}
		out = append(out, s[i])
	}
	return string(out)
}
