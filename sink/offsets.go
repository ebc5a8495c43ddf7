package sink

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/internal/kafkabatch"
	"github.com/outboxrelay/outboxrelay/internal/terminal"
	"github.com/outboxrelay/outboxrelay/router"
)

// Offsets records the position a connector last confirmed in a compacted
// Kafka topic, keyed as Kafka Connect keys a source connector's offsets
// (["<connector>",{"server":"<topic.prefix>"}]), with the value Debezium's
// PostgreSQL connector writes ({"lsn":…,"lsn_proc":…,"lsn_commit":…,
// "messageType":…,"ts_usec":…}). It survives a failover of the database,
// which the slot may not: a relay that finds its slot gone and a recorded
// position knows that events were committed it never saw. On Kafka
// Connect's offsets topic it is the connector's own record: Load reads
// what Debezium recorded, and Debezium resumes from what Save wrote.
type Offsets struct {
	p           *Producer
	topic       string
	key         []byte
	replication int
	window      int64 // Load's first window (0: loadWindow); tests set it small
}

// ErrOffsetsUnusable: the offsets topic cannot be read or created, and
// waiting will not help (credentials, authorization, a record that is not
// a position); the error says what to fix. It is final: the relay stops.
var ErrOffsetsUnusable = terminal.Final(errors.New("offsets topic unusable"))

// fail classifies an error of Load as the producer classifies a failed
// produce, and adds the fix where a config change cures it.
func (o *Offsets) fail(err error) error {
	if !retryable(err) || authFailure(err) {
		return fmt.Errorf("%w: %w", ErrOffsetsUnusable, explain(err))
	}
	return explain(err)
}

// Offset is one recorded position, as outboxrelay or Debezium wrote it.
type Offset struct {
	LSN  capture.LSN // the confirmed position (Debezium's lsn)
	Time time.Time   // when it was recorded (Debezium: the event's commit time)
	// Origin is the PostgreSQL server and timeline the position is on
	// ("<system id>/<timeline>"); "" in values written without it (by
	// Debezium, or by outboxrelay before 0.9).
	Origin string
	// Commit, Proc, Type, Xid and Events are Debezium's lsn_commit,
	// lsn_proc, messageType, txId and lsn_events_processed (0 or "" when
	// absent). outboxrelay writes Commit = Proc = LSN and Type COMMIT: a
	// position between two transactions.
	Commit, Proc capture.LSN
	Type         string
	Xid          int64
	Events       int64
	// ByRelay: outboxrelay wrote the value; otherwise Debezium did (or a
	// tool that writes its shape).
	ByRelay bool
	// InSnapshot: Debezium recorded it during an initial snapshot that
	// had not finished (snapshot set, neither last_snapshot_record nor
	// snapshot_completed true).
	InSnapshot bool
}

// offsetValue is the record value: Debezium's PostgreSQL offsets
// (PostgresOffsetContext.getOffset), which outboxrelay writes in full so
// that a Debezium connector started on the same key resumes from it, plus
// two fields of its own that Debezium ignores.
type offsetValue struct {
	LSN       uint64 `json:"lsn"`
	LSNProc   uint64 `json:"lsn_proc,omitempty"`
	LSNCommit uint64 `json:"lsn_commit,omitempty"`
	Type      string `json:"messageType,omitempty"`
	TxID      int64  `json:"txId,omitempty"`
	Events    int64  `json:"lsn_events_processed,omitempty"`
	TsUsec    int64  `json:"ts_usec"`
	Origin    string `json:"outboxrelay_origin,omitempty"` // Offset.Origin
	Relay     bool   `json:"outboxrelay,omitempty"`        // Offset.ByRelay
	// Debezium's snapshot fields, read only: snapshot is a string
	// ("INITIAL", …) in 2.x and 3.x, a boolean before.
	Snapshot     json.RawMessage `json:"snapshot,omitempty"`
	LastSnapshot bool            `json:"last_snapshot_record,omitempty"`
	SnapshotDone bool            `json:"snapshot_completed,omitempty"`
}

// offset is the position a decoded value records.
func (v offsetValue) offset() Offset {
	return Offset{LSN: capture.LSN(v.LSN), Time: time.UnixMicro(v.TsUsec), Origin: v.Origin, Commit: capture.LSN(v.LSNCommit), Proc: capture.LSN(v.LSNProc),
		Type: v.Type, Xid: v.TxID, Events: v.Events, ByRelay: v.Relay,
		InSnapshot: len(v.Snapshot) > 0 && string(v.Snapshot) != "false" && string(v.Snapshot) != "null" && !v.LastSnapshot && !v.SnapshotDone}
}

// offsetKey is Kafka Connect's key of a source connector's offsets, as its
// JsonConverter (Jackson) writes it: ["<connector>",{"server":"<prefix>"}],
// no spaces, no HTML escaping. The bytes matter: Connect keeps offsets by
// key bytes, and the producer's partitioner (murmur2, as Connect's) puts
// the record on the partition Debezium's records are on.
func offsetKey(connector, server string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode([]any{connector, map[string]string{"server": server}}) // strings only: cannot fail
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// Offsets returns the store of connector's position in topic (created
// compacted, with one partition and replication factor replication, -1
// for the broker's default, when missing).
func (p *Producer) Offsets(topic, connector, server string, replication int) *Offsets {
	return &Offsets{p: p, topic: topic, key: offsetKey(connector, server), replication: replication}
}

// Topic names the store's topic.
func (o *Offsets) Topic() string { return o.topic }

// Key is the record key the position is kept under.
func (o *Offsets) Key() string { return string(o.key) }

// Save sends pos to the topic; ack reports Kafka's answer, as for Send.
func (o *Offsets) Save(ctx context.Context, pos Offset, ack func(error)) error {
	v, err := o.value(pos)
	if err != nil {
		return err
	}
	return o.p.Send(ctx, router.Record{Topic: o.topic, Partition: -1, Key: o.key, Value: v, Timestamp: pos.Time}, ack)
}

// Message is the record that records pos, for a Kafka transaction (the
// exactly-once sink writes it with the transaction's records).
func (o *Offsets) Message(pos Offset) (kafkabatch.Message, error) {
	v, err := o.value(pos)
	if err != nil {
		return kafkabatch.Message{}, err
	}
	return kafkabatch.Message{Key: o.key, Value: v, Timestamp: pos.Time.UnixMilli()}, nil
}

// value is the record value of pos, as Save and Message write it.
func (o *Offsets) value(pos Offset) ([]byte, error) {
	lsn := uint64(pos.LSN)
	v, err := json.Marshal(offsetValue{LSN: lsn, LSNProc: lsn, LSNCommit: lsn, Type: "COMMIT", TxID: pos.Xid,
		TsUsec: pos.Time.UnixMicro(), Origin: pos.Origin, Relay: true})
	if err != nil {
		return nil, fmt.Errorf("recording the position in %s: %w", o.topic, err)
	}
	return v, nil
}

func (o *Offsets) create(ctx context.Context) error {
	tc := kafka.TopicConfig{Topic: o.topic, NumPartitions: 1, ReplicationFactor: o.replication,
		ConfigEntries: []kafka.ConfigEntry{{ConfigName: "cleanup.policy", ConfigValue: "compact"}}}
	res, err := o.p.client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{tc}})
	if err == nil {
		err = res.Errors[o.topic]
	}
	if errors.Is(err, kafka.TopicAlreadyExists) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating the offsets topic %q (offsets.storage.topic; compacted, one partition): %w", o.topic, err)
	}
	o.p.log.Info("created topic", "topic", o.topic, "partitions", 1, "cleanup.policy", "compact")
	return nil
}

// offsetsFetchBytes is the most a fetch of the offsets topic asks for.
// Its batches are small (a position, or a transaction's marker: 80 to 250
// bytes) and kafka-go decodes each batch of a fetch into a 64 KiB page of
// its own, kept until the fetch's records are dropped: a 1 MiB fetch of a
// transactional sink's positions held some 5,000 pages, over 200 MB of
// heap (about 20 MiB of it resident) at once.
const offsetsFetchBytes = 64 << 10

// Load returns the last position recorded for this connector; found is
// false when there is none (a first start). A missing topic is created,
// so that Save never waits for it. It reads as a read_committed consumer
// does: positions written inside Kafka transactions (the transactional
// sink's) count only once committed, aborted ones never; Save's count at
// once. It reads each partition back from its end (loadWindow) up to its
// last stable offset and waits (until ctx ends) while a transaction keeps
// that below the high watermark, so that an open transaction's position
// is not missed.
func (o *Offsets) Load(ctx context.Context) (pos Offset, found bool, err error) {
	pos, found, missing, err := o.read(ctx)
	if missing {
		return Offset{}, false, o.create(ctx)
	}
	return pos, found, err
}

// Read is Load without creating a missing topic (then found is false),
// for `check`, which changes nothing.
func (o *Offsets) Read(ctx context.Context) (pos Offset, found bool, err error) {
	pos, found, _, err = o.read(ctx)
	return pos, found, err
}

// read is the last position in every partition; missing says the topic
// does not exist.
func (o *Offsets) read(ctx context.Context) (pos Offset, found, missing bool, err error) {
	parts, err := o.p.partitionCount(ctx, o.topic, false)
	if errors.Is(err, kafka.UnknownTopicOrPartition) {
		return Offset{}, false, true, nil
	}
	if err != nil {
		return Offset{}, false, false, o.fail(err)
	}
	for part := 0; part < parts; part++ {
		p, ok, err := o.loadPartition(ctx, part)
		if err != nil {
			return Offset{}, false, false, o.fail(err)
		}
		if ok && (!found || p.Time.After(pos.Time)) {
			pos, found = p, true
		}
	}
	return pos, found, false, nil
}

// loadWindow is how many offsets before a partition's end Load reads
// first. A transactional sink writes a position per Kafka
// transaction, hundreds a second, and compaction leaves the active
// segment alone (up to segment.bytes, 1 GiB by default): read from the
// start, the topic cost seconds and tens of MiB at every start. The last
// position is near the end; the window widens (4 times each step) only
// while it holds no record under the key (a topic shared with other
// connectors), down to the partition's start.
const loadWindow = 4096

// loadPartition is the last position under the key in one partition:
// the newest window is read to the end, the older ones only when the
// newer held nothing under the key.
func (o *Offsets) loadPartition(ctx context.Context, part int) (pos Offset, found bool, err error) {
	tp := kafkabatch.TopicPartition{Topic: o.topic, Partition: part}
	offsets, err := o.p.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
		o.topic: {kafka.FirstOffsetOf(part), kafka.LastOffsetOf(part)}}})
	if err != nil {
		return pos, false, fmt.Errorf("offsets of %s/%d: %w", o.topic, part, err)
	}
	po := offsets.Topics[o.topic][0]
	if po.Error != nil {
		return pos, false, fmt.Errorf("offsets of %s/%d: %w", o.topic, part, po.Error)
	}
	width := cmp.Or(o.window, loadWindow)
	end, to := po.LastOffset, int64(-1) // -1: to the end, waiting out open transactions
	for {
		from := max(po.FirstOffset, end-width)
		pos, found, seen, err := o.scanCommitted(ctx, tp, from, to)
		if err != nil || seen || from <= po.FirstOffset {
			return pos, found, err
		}
		end, to, width = from, from, width*4
	}
}

// fetch is one read_committed fetch of tp from next, bounded by the
// producer's request.timeout.ms.
func (o *Offsets) fetch(ctx context.Context, tp kafkabatch.TopicPartition, next int64) (kafkabatch.Fetched, error) {
	ctx, cancel := context.WithTimeout(ctx, o.p.cfg.RequestTimeout)
	defer cancel()
	return kafkabatch.FetchCommitted(ctx, o.p.fetches, tp, next, offsetsFetchBytes)
}

// scanCommitted reads tp read_committed from offset from up to to (-1:
// its end) and returns the last position under the key; seen says that
// a record under the key was read (a tombstone too: then found is false).
func (o *Offsets) scanCommitted(ctx context.Context, tp kafkabatch.TopicPartition, from, to int64) (pos Offset, found, seen bool, err error) {
	for next := from; to < 0 || next < to; {
		f, err := o.fetch(ctx, tp, next)
		if err != nil {
			return pos, false, false, err
		}
		for _, b := range f.Batches {
			for _, r := range b.Records {
				off := b.BaseOffset + int64(r.OffsetDelta)
				if to >= 0 && off >= to || string(r.Key) != string(o.key) {
					continue
				}
				seen = true
				if r.Value == nil {
					pos, found = Offset{}, false
					continue
				}
				var v offsetValue
				if err := json.Unmarshal(r.Value, &v); err != nil {
					return pos, false, seen, fmt.Errorf("%w: the recorded position in %s at offset %d is not JSON {\"lsn\":…}: %w", ErrOffsetsUnusable, o.topic, off, err)
				}
				pos, found = v.offset(), true
			}
		}
		switch {
		case f.Next > next:
			next = f.Next
		case to < 0 && f.LastStableOffset >= f.HighWatermark && next >= f.HighWatermark:
			return pos, found, seen, nil // read to the end
		// A window below to ends only at to: a new leader whose high
		// watermark still lags below it is waited for, not taken as the end.
		case next < f.LastStableOffset:
			next = f.LastStableOffset // the rest below it was compacted away
		default:
			// A transaction is open at next: wait for its end.
			select {
			case <-ctx.Done():
				return pos, false, seen, fmt.Errorf("reading %s/%d read_committed: a transaction stays open at offset %d: %w", o.topic, tp.Partition, next, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return pos, found, seen, nil
}
