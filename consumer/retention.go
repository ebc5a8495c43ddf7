package consumer

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Execer runs a statement: a *pgxpool.Pool, a *pgx.Conn or a pgx.Tx.
type Execer interface {
	Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error)
}

// DeleteProcessed deletes the rows of table (processed_events) that
// consumer recorded more than olderThan ago, in batches of 10,000, and
// returns how many it deleted. Run it from a daily job.
//
// How old is safe: a row may go only when its event can no longer arrive
// again. An event comes again while its message is still in the topic (a
// group reset to the earliest offsets, a new consumer instance that lost
// its offsets) or when the relay sends it again after a crash (at most its
// unconfirmed window, seconds). So keep the rows at least as long as the
// topic's retention.ms, plus a margin for a consumer that was down: with
// Kafka's default of 7 days, delete rows older than 8 days. A topic kept
// forever (retention.ms=-1, compaction) needs its rows kept forever, or a
// rule that events older than the cut-off are ignored.
func DeleteProcessed(ctx context.Context, db Execer, table, consumer string, olderThan time.Duration) (int64, error) {
	if !tableName.MatchString(table) {
		return 0, fmt.Errorf("consumer: DeleteProcessed: %q is not a table or schema.table name", table)
	}
	if olderThan <= 0 {
		return 0, fmt.Errorf("consumer: DeleteProcessed: olderThan %s must be positive (see its doc for how old is safe)", olderThan)
	}
	q := quoteTable(table)
	stmt := `DELETE FROM ` + q + ` WHERE ctid = ANY(ARRAY(SELECT ctid FROM ` + q +
		` WHERE consumer = $1 AND processed_at < now() - make_interval(secs => $2) LIMIT 10000))`
	var total int64
	for {
		tag, err := db.Exec(ctx, stmt, consumer, olderThan.Seconds())
		if err != nil {
			return total, fmt.Errorf("consumer: deleting processed events of %s older than %s from %s: %w", consumer, olderThan, table, err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < 10000 {
			return total, nil
		}
	}
}
