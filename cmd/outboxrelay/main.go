// Command outboxrelay streams transactional-outbox rows from PostgreSQL's
// logical replication to Kafka, routing them exactly as Debezium's Outbox
// EventRouter does, from the same connector JSON.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "outboxrelay:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: outboxrelay <command> [flags]; commands: version")
	}
	switch args[0] {
	case "version":
		fmt.Println("outboxrelay (development build)")
		return nil
	default:
		return fmt.Errorf("unknown command %q; commands: version", args[0])
	}
}
