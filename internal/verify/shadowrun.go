package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/conformance"
	"github.com/outboxrelay/outboxrelay/internal/kafkaread"
	"github.com/outboxrelay/outboxrelay/internal/setup"
	"github.com/outboxrelay/outboxrelay/postgres"
	"github.com/outboxrelay/outboxrelay/replication"
)

// RunShadow is `outboxrelay verify --shadow`: it reads the topics the
// outbox rows route to (the live connector's) and their twins under
// prefix (the shadow run's), compares them by event id (CompareShadow),
// writes the report to w, and returns an error when anything but a
// documented difference differs. topics, when given, are the live
// topics; otherwise where, when set, selects the rows whose route values
// name them. Progress goes to w as each topic is read.
func RunShadow(ctx context.Context, set *setup.Setup, prefix, where string, topics []string, w io.Writer) error {
	dialer, conn, err := open(ctx, set)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	names := topics
	if len(names) == 0 {
		if names, err = shadowTopics(ctx, conn, set, where); err != nil {
			return err
		}
	}
	if len(names) == 0 {
		return errors.New("verify --shadow: no outbox row routes to a topic (an outbox whose rows are deleted in the transaction that inserts them keeps none): name the live connector's topics with --topics a,b")
	}
	r := kafkaread.Reader{Broker: set.Kafka.Brokers[0], Dialer: dialer}
	live, err := readRecords(ctx, r, names, "", w)
	if err != nil {
		return err
	}
	shadow, err := readRecords(ctx, r, names, prefix, w)
	if err != nil {
		return err
	}
	rcfg := set.Router.Config()
	c := ShadowCase(rcfg.ExpandJSONPayload, rcfg.ExtendedHeaders, rcfg.DecimalHandlingMode)
	rep := CompareShadow(c, live, shadow, "id", prefix)
	fmt.Fprintf(w, "topics %v against %s*\n%s\n", names, prefix, rep)
	if !rep.OK() {
		return fmt.Errorf("verify --shadow: %d differences, %d events only live, %d only in the shadow, %d keys out of order",
			len(rep.Differences), len(rep.OnlyLive), len(rep.OnlyShadow), len(rep.OutOfOrder))
	}
	return nil
}

// shadowTopics returns, sorted, the topics the outbox rows (those where
// selects, when set) route to.
func shadowTopics(ctx context.Context, conn *pgx.Conn, set *setup.Setup, where string) ([]string, error) {
	tables, err := replication.IncludedTables(ctx, conn, &set.Postgres)
	if err != nil {
		return nil, err
	}
	rcfg := set.Router.Config()
	topics := map[string]bool{}
	for _, table := range tables {
		schema, name, _ := strings.Cut(table, ".")
		qualified := postgres.QuoteIdent(schema) + "." + postgres.QuoteIdent(name)
		if err := routedTopics(ctx, conn, set.Router, qualified, rcfg.RouteByField, where, topics); err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	sort.Strings(names)
	return names, nil
}

// readRecords reads every record of prefix+topic for each topic, per
// partition in offset order, saying on w how many each had.
func readRecords(ctx context.Context, r kafkaread.Reader, topics []string, prefix string, w io.Writer) ([]conformance.Record, error) {
	var out []conformance.Record
	for _, t := range topics {
		msgs, err := r.Topic(ctx, prefix+t)
		if err != nil {
			return nil, fmt.Errorf("verify: %w", err)
		}
		fmt.Fprintf(w, "read %d records of %s\n", len(msgs), prefix+t)
		for _, m := range msgs {
			out = append(out, record(prefix+t, m))
		}
	}
	return out, nil
}

// record is m, read from topic, as the comparison sees it.
func record(topic string, m kafka.Message) conformance.Record {
	rec := conformance.Record{Topic: topic, Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value}
	for _, h := range m.Headers {
		rec.Headers = append(rec.Headers, conformance.Header{Key: h.Key, Value: h.Value})
	}
	return rec
}
