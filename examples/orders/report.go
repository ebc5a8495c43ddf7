package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
)

// report prints the totals and fails when the loyalty points are not
// exactly the committed orders' points.
func report(ctx context.Context, args []string) error {
	fl := flag.NewFlagSet("report", flag.ContinueOnError)
	e, err := parseFlags(ctx, fl, args)
	if err != nil {
		return err
	}
	defer e.pool.Close()
	var orders, events, processed, customers, wrong int
	var expected, points int64
	err = e.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM `+e.table("orders")+`),
		(SELECT count(*) FROM `+e.opts.Table+`),
		(SELECT count(*) FROM `+e.table("processed_events")+` WHERE consumer = $1),
		(SELECT coalesce(sum(total_cents / 100), 0) FROM `+e.table("orders")+`),
		(SELECT coalesce(sum(points), 0) FROM `+e.table("loyalty_points")+`)`, groupName).
		Scan(&orders, &events, &processed, &expected, &points)
	if err != nil {
		return err
	}
	err = e.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE coalesce(o.points, -1) <> coalesce(l.points, -1))
		FROM (SELECT customer_id, sum(total_cents / 100) AS points FROM `+e.table("orders")+` GROUP BY 1) o
		FULL JOIN `+e.table("loyalty_points")+` l USING (customer_id)`).Scan(&customers, &wrong)
	if err != nil {
		return err
	}
	fmt.Printf("orders committed: %d; events in the outbox: %d; events applied (processed_events): %d\n", orders, events, processed)
	if len(e.brokers) > 0 {
		relayed, err := topicRecords(ctx, e)
		if err != nil {
			return err
		}
		fmt.Printf("events relayed (records in %s): %d\n", e.topic, relayed)
	}
	fmt.Printf("loyalty points: %d, committed orders' points: %d; customers: %d, with wrong points: %d\n", points, expected, customers, wrong)
	if points != expected || wrong != 0 || processed != orders || events != orders {
		return errors.New("totals disagree")
	}
	return nil
}

// reset moves the loyalty consumer group to the earliest offsets of its
// topic, as kafka-consumer-groups --reset-offsets --to-earliest does; the
// consumer must be stopped.
func reset(ctx context.Context, args []string) error {
	fl := flag.NewFlagSet("reset", flag.ContinueOnError)
	e, err := parseFlags(ctx, fl, args)
	if err != nil {
		return err
	}
	defer e.pool.Close()
	if len(e.brokers) == 0 {
		return errors.New("KAFKA_BROKERS is not set")
	}
	conn, err := kafka.Dial("tcp", e.brokers[0])
	if err != nil {
		return err
	}
	parts, err := conn.ReadPartitions(e.topic)
	conn.Close()
	if err != nil {
		return fmt.Errorf("reading the partitions of %s: %w", e.topic, err)
	}
	client := &kafka.Client{Addr: kafka.TCP(e.brokers...), Timeout: 10 * time.Second}
	var reqs []kafka.OffsetRequest
	for _, p := range parts {
		reqs = append(reqs, kafka.FirstOffsetOf(p.ID))
	}
	first, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{e.topic: reqs}})
	if err != nil {
		return fmt.Errorf("listing the first offsets of %s: %w", e.topic, err)
	}
	var commits []kafka.OffsetCommit
	for _, p := range first.Topics[e.topic] {
		if p.Error != nil {
			return fmt.Errorf("first offset of %s/%d: %w", e.topic, p.Partition, p.Error)
		}
		commits = append(commits, kafka.OffsetCommit{Partition: p.Partition, Offset: p.FirstOffset})
	}
	// Generation -1 and no member id: an administrative commit, which the
	// coordinator accepts only while the group has no members.
	res, err := client.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: groupName, GenerationID: -1, Topics: map[string][]kafka.OffsetCommit{e.topic: commits}})
	if err != nil {
		return fmt.Errorf("committing the earliest offsets for group %s: %w (is a consumer still running?)", groupName, err)
	}
	for _, p := range res.Topics[e.topic] {
		if p.Error != nil {
			return fmt.Errorf("committing %s/%d for group %s: %w (is a consumer still running?)", e.topic, p.Partition, groupName, p.Error)
		}
	}
	fmt.Printf("reset: group %s to the earliest offsets of %s (%d partitions)\n", groupName, e.topic, len(commits))
	return nil
}

// topicRecords counts the records in the loyalty topic: the relay's
// deliveries, duplicates after a relay crash included.
func topicRecords(ctx context.Context, e *env) (int64, error) {
	conn, err := kafka.Dial("tcp", e.brokers[0])
	if err != nil {
		return 0, err
	}
	parts, err := conn.ReadPartitions(e.topic)
	conn.Close()
	if err != nil {
		return 0, fmt.Errorf("reading the partitions of %s: %w", e.topic, err)
	}
	var reqs []kafka.OffsetRequest
	for _, p := range parts {
		reqs = append(reqs, kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
	}
	client := &kafka.Client{Addr: kafka.TCP(e.brokers...), Timeout: 10 * time.Second}
	res, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{e.topic: reqs}})
	if err != nil {
		return 0, fmt.Errorf("listing the offsets of %s: %w", e.topic, err)
	}
	var n int64
	for _, p := range res.Topics[e.topic] {
		if p.Error != nil {
			return 0, fmt.Errorf("offsets of %s/%d: %w", e.topic, p.Partition, p.Error)
		}
		n += p.LastOffset - p.FirstOffset
	}
	return n, nil
}
