package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/textlist"
)

// options are the flags of every mode.
type options struct {
	mode string

	pgURL, brokers string
	table          string
	publication    string
	create         bool
	grantTo        string
	topicPrefix    string
	types          string
	aggregates     int
	eventType      string
	payloadBytes   int
	workers        int
	rowsPerTx      int
	txPerTrip      int
	slot           string
	freshSlot      bool
	noSlot         bool // the relay polls the table (outbox.capture.mode=poll)
	readCommitted  bool // consume with isolation.level=read_committed (an exactly-once relay)

	relayCmd  string
	relayLog  string
	stopGrace time.Duration

	events int64 // backlog, recvlogical

	recvSlot     string // backlog: --recvlogical-slot; recvlogical: --slot
	recvBin      string
	recvSSLMode  string // pg_recvlogical's sslmode, as the relays connect
	keepRecvSlot bool

	rate     float64
	duration time.Duration
	warmup   time.Duration

	timeout        time.Duration
	confirmTimeout time.Duration
	quiet          time.Duration
	progress       time.Duration
	logLevel       slog.Level

	workload Workload
	messages string // --messages: the logical decoding message prefix
	topics   []string
}

func envOr(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

func (o *options) register(fl *flag.FlagSet) {
	fl.StringVar(&o.pgURL, "pg-url", envOr("OUTBOXRELAY_TEST_PG_URL", "DATABASE_URL"), "PostgreSQL DSN with the right to insert and read pg_replication_slots (default $OUTBOXRELAY_TEST_PG_URL, $DATABASE_URL)")
	fl.StringVar(&o.table, "table", "public.outbox", "outbox table with the columns aggregate_type, aggregate_id, event_type, payload (jsonb); message_id must have a default")
	fl.StringVar(&o.publication, "publication", "", "publication of the table: made by --create, used by pg_recvlogical")
	fl.BoolVar(&o.create, "create", false, "create --table (the fixture's columns) and --publication when missing")
	fl.StringVar(&o.grantTo, "grant-to", "", "with --create: GRANT SELECT on the table to this role (the relay's user)")
	fl.IntVar(&o.workers, "workers", 4, "inserting connections")
	fl.IntVar(&o.rowsPerTx, "rows-per-tx", 1, "rows per transaction")
	fl.IntVar(&o.payloadBytes, "payload-bytes", 0, "extra bytes in each payload (a \"pad\" string)")
	fl.IntVar(&o.aggregates, "aggregates", 100, "distinct aggregate ids (Kafka keys)")
	fl.StringVar(&o.messages, "messages", "", "write the events as transactional logical decoding messages with this prefix instead of --table rows (the relay chains DecodeLogicalDecodingMessageContent)")
	fl.DurationVar(&o.progress, "progress", 2*time.Second, "interval of the progress lines on stderr")
	o.logLevel = slog.LevelInfo
	fl.Func("log-level", "stderr log level: debug, info, warn, error", func(s string) error { return o.logLevel.UnmarshalText([]byte(s)) })
	if o.mode == "recvlogical" {
		o.registerBacklog(fl, "slot", "pg_recvlogical's slot: dropped if present and idle, created before the insert (required)", "keep-slot")
		return
	}
	fl.StringVar(&o.brokers, "kafka-brokers", envOr("OUTBOXRELAY_TEST_KAFKA_BROKERS", "KAFKA_BOOTSTRAP_SERVERS"), "Kafka bootstrap servers host:port[,…] (default $OUTBOXRELAY_TEST_KAFKA_BROKERS, $KAFKA_BOOTSTRAP_SERVERS)")
	fl.BoolVar(&o.readCommitted, "read-committed", false, "consume with isolation.level=read_committed: an event counts when its Kafka transaction commits (exactly.once.support=required)")
	fl.StringVar(&o.topicPrefix, "topic-prefix", "", "topic = prefix + aggregate type (EventRouter route.topic.replacement; Debezium's default is \"outbox.event.\")")
	fl.StringVar(&o.types, "aggregate-types", "bench", "comma-separated aggregate types; aggregate a has type a mod len")
	fl.StringVar(&o.eventType, "event-type", "BenchEvent", "event_type column value")
	fl.StringVar(&o.slot, "slot", "", "the relay's slot: created (pgoutput) before inserting when missing; its confirmed_flush_lsn is timed")
	fl.BoolVar(&o.noSlot, "no-slot", false, "the relay needs no slot (outboxrelay in poll mode): --relay-cmd without --slot")
	fl.BoolVar(&o.freshSlot, "fresh-slot", false, "drop --slot (when idle) and create it anew before inserting, so the relay does not first decode WAL written since its last run")
	fl.StringVar(&o.relayCmd, "relay-cmd", "", "start the relay with /bin/sh -c (in its own process group), measure it, SIGTERM it at the end")
	fl.StringVar(&o.relayLog, "relay-log", filepath.Join(os.TempDir(), "outboxbench-relay.log"), "the relay's stdout and stderr")
	fl.DurationVar(&o.stopGrace, "stop-grace", 30*time.Second, "time the relay gets to exit after SIGTERM before SIGKILL")
	fl.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up waiting for events (missing ones are reported) after this long")
	fl.DurationVar(&o.confirmTimeout, "confirm-timeout", 90*time.Second, "after the last event arrived, wait at most this long for --slot to confirm the run's last COMMIT (then confirm_timeout is reported)")
	fl.DurationVar(&o.quiet, "quiet", time.Second, "keep consuming this long after the last event, to count late duplicates")
	if o.mode == "backlog" {
		o.registerBacklog(fl, "recvlogical-slot", "also time pg_recvlogical on the same backlog from this fresh slot (made before the insert, dropped after)", "keep-recvlogical-slot")
		return
	}
	fl.StringVar(&o.recvSlot, "recvlogical-slot", "", "also run pg_recvlogical beside the relay through the run, streaming from this fresh slot (made before the insert, dropped after), for its CPU per event")
	fl.StringVar(&o.recvBin, "pg-recvlogical", "", "pg_recvlogical binary (default: PATH, then /usr/lib/postgresql/*/bin)")
	fl.StringVar(&o.recvSSLMode, "recvlogical-sslmode", "prefer", "pg_recvlogical's sslmode, set in --pg-url for it: prefer, the default of the connector's database.sslmode, so that it reads the stream over the transport the relays use (TLS when the server offers it); empty keeps --pg-url's")
	fl.Float64Var(&o.rate, "rate", 1000, "events per second")
	fl.DurationVar(&o.duration, "duration", 60*time.Second, "how long to insert")
	fl.DurationVar(&o.warmup, "warmup", 2*time.Second, "events of the first warmup are checked but left out of the latency")
}

// registerBacklog adds the flags of the modes that insert a backlog; the
// pg_recvlogical slot flag is named slotFlag.
func (o *options) registerBacklog(fl *flag.FlagSet, slotFlag, slotUsage, keepFlag string) {
	fl.Int64Var(&o.events, "events", 100000, "events to insert")
	fl.IntVar(&o.txPerTrip, "tx-per-trip", 0, "transactions per round trip (default: enough for ~100 rows)")
	fl.StringVar(&o.recvSlot, slotFlag, "", slotUsage)
	fl.StringVar(&o.recvBin, "pg-recvlogical", "", "pg_recvlogical binary (default: PATH, then /usr/lib/postgresql/*/bin)")
	fl.StringVar(&o.recvSSLMode, "recvlogical-sslmode", "prefer", "pg_recvlogical's sslmode, set in --pg-url for it: prefer, the default of the connector's database.sslmode, so that it reads the stream over the transport the relays use (TLS when the server offers it); empty keeps --pg-url's")
	fl.BoolVar(&o.keepRecvSlot, keepFlag, false, "do not drop the pg_recvlogical slot at the end")
}

func (o *options) validate() error {
	var errs []error
	if o.pgURL == "" {
		errs = append(errs, errors.New("--pg-url is required"))
	}
	if o.mode != "recvlogical" && o.brokers == "" {
		errs = append(errs, errors.New("--kafka-brokers is required"))
	}
	if err := checkIdent("--table", o.table); err != nil {
		errs = append(errs, err)
	}
	for flag, v := range map[string]string{"--publication": o.publication, "--slot": o.slot, "--recvlogical-slot": o.recvSlot, "--grant-to": o.grantTo} {
		if v == "" {
			continue
		}
		if err := checkIdent(flag, v); err != nil || strings.Contains(v, ".") {
			errs = append(errs, fmt.Errorf("%s %q: use a plain identifier", flag, v))
		}
	}
	if o.create && o.publication == "" {
		errs = append(errs, errors.New("--create needs --publication (the relay streams from it)"))
	}
	if o.recvSlot != "" && o.publication == "" {
		errs = append(errs, errors.New("pg_recvlogical needs --publication"))
	}
	if o.mode == "recvlogical" && o.recvSlot == "" {
		errs = append(errs, errors.New("--slot is required"))
	}
	if o.recvSlot != "" && o.recvSlot == o.slot {
		errs = append(errs, errors.New("--recvlogical-slot must differ from --slot"))
	}
	if o.freshSlot && o.slot == "" {
		errs = append(errs, errors.New("--fresh-slot needs --slot"))
	}
	if o.relayCmd != "" && o.slot == "" && !o.noSlot {
		errs = append(errs, errors.New("--relay-cmd needs --slot (the relay's slot must exist before the insert, or a no_data relay would skip the events), or --no-slot for a relay in poll mode"))
	}
	if o.mode == "steady" {
		if o.rate <= 0 || o.duration <= 0 {
			errs = append(errs, errors.New("--rate and --duration must be positive"))
		}
		o.events = steadyEvents(o.rate, o.duration)
	}
	run := make([]byte, 6)
	_, _ = rand.Read(run)
	types := textlist.Split(o.types)
	if o.mode == "recvlogical" {
		types = []string{"bench"}
		o.eventType = "BenchEvent"
	}
	o.workload = Workload{
		Run: hex.EncodeToString(run), Events: o.events, RowsPerTx: o.rowsPerTx, Workers: o.workers,
		Aggregates: o.aggregates, Types: types, EventType: o.eventType, PadBytes: o.payloadBytes,
		MessagePrefix: o.messages,
	}
	if o.messages != "" && (strings.ContainsAny(o.messages, "'\\") || o.mode == "recvlogical") {
		errs = append(errs, fmt.Errorf("--messages %q: a prefix without quotes or backslashes, in the backlog or steady mode", o.messages))
	}
	if err := o.workload.Validate(); err != nil {
		errs = append(errs, err)
	}
	for _, t := range types {
		o.topics = append(o.topics, o.topicPrefix+t)
	}
	if o.txPerTrip <= 0 {
		o.txPerTrip = max(1, 100/max(1, o.rowsPerTx))
	}
	return errors.Join(errs...)
}
