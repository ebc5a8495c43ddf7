package sink

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/kafkabatch"
)

// Offsets records the position a connector last confirmed in a compacted
// Kafka topic, keyed as Kafka Connect keys a source connector's offsets
// (["<connector>",{"server":"<topic.prefix>"}]), with a value in the
// shape of Debezium's PostgreSQL offsets ({"lsn":…,"lsn_commit":…,
// "ts_usec":…}). It survives a failover of the database, which the slot
// may not: a relay that finds its slot gone and a recorded position knows
// that events were committed it never saw.
type Offsets struct {
	p           *Producer
	topic       string
	key         []byte
	replication int
	window      int64 // Load's first window (0: loadWindow); tests set it small
}

// ErrOffsetsUnusable: the offsets topic cannot be read or created, and
// waiting will not help (credentials, authorization, a record that is not
// a position); the error says what to fix.
var ErrOffsetsUnusable = errors.New("offsets topic unusable")

// fail classifies an error of Load as the producer classifies a failed
// produce, and adds the fix where a config change cures it.
func (o *Offsets) fail(err error) error {
	if !retryable(err) || authFailure(err) {
		return fmt.Errorf("%w: %w", ErrOffsetsUnusable, explain(err))
	}
	return explain(err)
}

// Offset is one recorded position.
type Offset struct {
	LSN  uint64    // the confirmed position
	Time time.Time // when it was recorded
	// Origin is the PostgreSQL server and timeline the position is on
	// ("<system id>/<timeline>"), written by the transactional sink; ""
	// in values written without it.
	Origin string
}

type offsetValue struct {
	LSN       uint64 `json:"lsn"`
	LSNCommit uint64 `json:"lsn_commit"`
	TsUsec    int64  `json:"ts_usec"`
	Origin    string `json:"outboxrelay_origin,omitempty"` // Offset.Origin
}

// Offsets returns the store of connector's position in topic (created
// compacted, with one partition and replication factor replication, -1
// for the broker's default, when missing).
func (p *Producer) Offsets(topic, connector, server string, replication int) *Offsets {
	key, _ := json.Marshal([]any{connector, map[string]string{"server": server}})
	return &Offsets{p: p, topic: topic, key: key, replication: replication}
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
	return o.p.Send(ctx, Record{Topic: o.topic, Partition: -1, Key: o.key, Value: v, Timestamp: pos.Time}, ack)
}

// value is the record value of pos, as Save and the transactional sink
// write it.
func (o *Offsets) value(pos Offset) ([]byte, error) {
	v, err := json.Marshal(offsetValue{LSN: pos.LSN, LSNCommit: pos.LSN, TsUsec: pos.Time.UnixMicro(), Origin: pos.Origin})
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
	parts, err := o.p.partitionCount(ctx, o.topic, false)
	if errors.Is(err, kafka.UnknownTopicOrPartition) {
		return Offset{}, false, o.create(ctx)
	}
	if err != nil {
		return Offset{}, false, o.fail(err)
	}
	for part := 0; part < parts; part++ {
		p, ok, err := o.loadPartition(ctx, part)
		if err != nil {
			return Offset{}, false, o.fail(err)
		}
		if ok && (!found || p.Time.After(pos.Time)) {
			pos, found = p, true
		}
	}
	return pos, found, nil
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

// scanCommitted reads tp read_committed from offset from up to to (-1:
// its end) and returns the last position under the key; seen says that
// a record under the key was read (a tombstone too: then found is false).
func (o *Offsets) scanCommitted(ctx context.Context, tp kafkabatch.TopicPartition, from, to int64) (pos Offset, found, seen bool, err error) {
	for next := from; to < 0 || next < to; {
		f, err := kafkabatch.FetchCommitted(ctx, o.p.client, tp, next, offsetsFetchBytes)
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
				pos, found = Offset{LSN: v.LSN, Time: time.UnixMicro(v.TsUsec), Origin: v.Origin}, true
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
