package verify

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/kafkaread"
)

// OutboxQuery says how to read events from an outbox table.
type OutboxQuery struct {
	Table     string // "schema.table", already a safe identifier pair
	IDColumn  string // transforms.<alias>.table.field.event.id
	KeyColumn string // transforms.<alias>.table.field.event.key
	// OrderBy is an SQL expression, increasing with commit order, cast to
	// bigint. Empty: the commit timestamp of each row's transaction, which
	// needs track_commit_timestamp = on.
	OrderBy string
	Where   string // optional SQL condition, e.g. created_at > now() - interval '1 hour'
}

// Outbox reads the events of an outbox table, in the order the rows were
// inserted within each transaction (by ctid, good enough for rows that were
// never updated).
func Outbox(ctx context.Context, conn *pgx.Conn, q OutboxQuery) ([]Event, error) {
	order := q.OrderBy
	if order == "" {
		var on string
		if err := conn.QueryRow(ctx, `SHOW track_commit_timestamp`).Scan(&on); err != nil {
			return nil, fmt.Errorf("verify: reading track_commit_timestamp: %w", err)
		}
		if on != "on" {
			return nil, errors.New("verify: commit order needs track_commit_timestamp = on, or an --order-by expression that increases with commit order (e.g. a bigserial column filled at commit)")
		}
		order = `(extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000000)::bigint`
	}
	where := ""
	if q.Where != "" {
		where = " WHERE " + q.Where
	}
	sql := fmt.Sprintf(`SELECT %s::text, %s::text, %s, row_number() OVER (ORDER BY ctid) FROM %s%s`,
		pgx.Identifier{q.IDColumn}.Sanitize(), pgx.Identifier{q.KeyColumn}.Sanitize(), order, q.Table, where)
	rows, err := conn.Query(ctx, sql)
	if err != nil {
		return nil, fmt.Errorf("verify: reading %s: %w", q.Table, err)
	}
	var out []Event
	var ev Event
	var key *string
	_, err = pgx.ForEachRow(rows, []any{&ev.ID, &key, &ev.Order, &ev.Seq}, func() error {
		ev.Key = ""
		if key != nil {
			ev.Key = *key
		}
		out = append(out, ev)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("verify: reading %s: %w", q.Table, err)
	}
	return out, nil
}

// Topics reads every record of the topics, from the start of each
// partition to its end at the time of the call, keeping the idHeader value
// (Debezium's "id"), key and position. Missing topics count as empty. Each
// partition's records come in offset order.
func Topics(ctx context.Context, dialer *kafka.Dialer, brokers string, topics []string, idHeader string) ([]Delivery, error) {
	r := kafkaread.Reader{Broker: brokers, Dialer: dialer}
	var out []Delivery
	for _, topic := range topics {
		msgs, err := r.Topic(ctx, topic)
		if err != nil {
			return nil, fmt.Errorf("verify: %w", err)
		}
		for _, m := range msgs {
			d := Delivery{Key: string(m.Key), Topic: topic, Partition: m.Partition, Offset: m.Offset}
			for _, h := range m.Headers {
				if h.Key == idHeader {
					d.ID = string(h.Value)
				}
			}
			out = append(out, d)
		}
	}
	return out, nil
}
