// Command orders is the transactional outbox end to end, as a newcomer
// runs it: a shop places orders (an orders row and its event in one
// transaction, with package outbox), outboxrelay relays the events to
// Kafka, and a loyalty-points service (package consumer) adds each
// order's points exactly once.
//
// The tables are the polling article's: events_outbox (bigserial id,
// aggregate_id, type, payload), processed_events, loyalty_points. Every
// name comes from the relay's connector JSON (connector.json here): the
// schema is the one of table.include.list, the topic is what the relay
// makes of the type "order.placed".
//
// About one order in ten is a customer's double submit that reuses an
// order reference: the orders INSERT fails on the unique key after the
// event was written, the transaction rolls back, and the event disappears
// with it. No consumer ever hears of an order that does not exist.
//
// Usage (DATABASE_URL: a PostgreSQL URL allowed to create tables and the
// publication; KAFKA_BROKERS: host:port):
//
//	orders setup   --config connector.json   # tables, publication, grants
//	outboxrelay run --config connector.json --kafka-brokers $KAFKA_BROKERS &
//	orders loyalty --config connector.json & # the consumer; SIGTERM stops it cleanly
//	orders place   --config connector.json --orders 2000 --writers 4
//	orders report  --config connector.json   # totals; exit 1 when they disagree
//	orders reset   --config connector.json   # consumer group to the earliest offsets (consumer stopped)
//
// LOYALTY_CRASH_AFTER=N makes the loyalty consumer kill itself (SIGKILL)
// right after the N-th event's transaction committed and before its Kafka
// offset is committed, the one moment that tells an idempotent consumer
// from one that only looks like it: that event comes again after the
// restart and must not add points twice.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

const (
	groupName = "loyalty-points" // consumer group and processed_events.consumer
	orderType = "order.placed"   // the events' type: topic "<prefix>.order"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: orders setup|place|loyalty|report|reset --config connector.json [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "setup":
		err = setup(ctx, args)
	case "place":
		err = place(ctx, args)
	case "loyalty":
		err = loyalty(ctx, args)
	case "report":
		err = report(ctx, args)
	case "reset":
		err = reset(ctx, args)
	default:
		err = fmt.Errorf("unknown command %q: use setup, place, loyalty, report or reset", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "orders "+os.Args[1]+":", err)
		os.Exit(1)
	}
}
