package verify

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"
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
// (Debezium's "id"), key and position. Missing topics count as empty.
func Topics(ctx context.Context, dialer *kafka.Dialer, brokers string, topics []string, idHeader string) ([]Delivery, error) {
	var out []Delivery
	for _, topic := range topics {
		conn, err := dialer.DialContext(ctx, "tcp", brokers)
		if err != nil {
			return nil, fmt.Errorf("verify: dialing %s: %w", brokers, err)
		}
		parts, err := conn.ReadPartitions(topic)
		conn.Close()
		if errors.Is(err, kafka.UnknownTopicOrPartition) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("verify: partitions of %s: %w", topic, err)
		}
		for _, p := range parts {
			ds, err := readPartition(ctx, dialer, brokers, topic, p.ID, idHeader)
			if err != nil {
				return nil, err
			}
			out = append(out, ds...)
		}
	}
	return out, nil
}

func readPartition(ctx context.Context, dialer *kafka.Dialer, brokers, topic string, partition int, idHeader string) ([]Delivery, error) {
	conn, err := dialer.DialLeader(ctx, "tcp", brokers, topic, partition)
	if err != nil {
		return nil, fmt.Errorf("verify: leader of %s/%d: %w", topic, partition, err)
	}
	defer conn.Close()
	first, last, err := conn.ReadOffsets()
	if err != nil {
		return nil, fmt.Errorf("verify: offsets of %s/%d: %w", topic, partition, err)
	}
	var out []Delivery
	for off := first; off < last; {
		if _, err := conn.Seek(off, kafka.SeekAbsolute); err != nil {
			return nil, fmt.Errorf("verify: seeking %s/%d to %d: %w", topic, partition, off, err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		batch := conn.ReadBatch(1, 8<<20)
		n := 0
		for {
			m, err := batch.ReadMessage()
			if err != nil {
				break
			}
			n++
			d := Delivery{Key: string(m.Key), Topic: topic, Partition: partition, Offset: m.Offset}
			for _, h := range m.Headers {
				if h.Key == idHeader {
					d.ID = string(h.Value)
				}
			}
			out = append(out, d)
			off = m.Offset + 1
			if off >= last {
				break
			}
		}
		if err := batch.Close(); err != nil && n == 0 {
			return nil, fmt.Errorf("verify: reading %s/%d at %d: %w", topic, partition, off, err)
		}
		if n == 0 {
			return nil, fmt.Errorf("verify: no progress reading %s/%d at offset %d of %d", topic, partition, off, last)
		}
	}
	return out, nil
}
