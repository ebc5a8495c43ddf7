package sink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/segmentio/kafka-go"
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
	window      int64 // LoadCommitted's first window (0: loadWindow); tests set it small
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
	v, err := json.Marshal(offsetValue{LSN: pos.LSN, LSNCommit: pos.LSN, TsUsec: pos.Time.UnixMicro()})
	if err != nil {
		return fmt.Errorf("recording the position in %s: %w", o.topic, err)
	}
	return o.p.Send(ctx, Record{Topic: o.topic, Partition: -1, Key: o.key, Value: v, Timestamp: pos.Time}, ack)
}

// Load reads the topic to its end and returns the last position recorded
// for this connector; found is false when there is none (a first start).
// A missing topic is created, so that Save never waits for it.
func (o *Offsets) Load(ctx context.Context) (pos Offset, found bool, err error) {
	pos, found, err = o.load(ctx)
	if err != nil {
		return Offset{}, false, o.fail(err)
	}
	return pos, found, nil
}

func (o *Offsets) load(ctx context.Context) (pos Offset, found bool, err error) {
	parts, err := o.p.partitionCount(ctx, o.topic, false)
	if errors.Is(err, kafka.UnknownTopicOrPartition) {
		return Offset{}, false, o.create(ctx)
	}
	if err != nil {
		return Offset{}, false, err
	}
	for part := 0; part < parts; part++ {
		p, ok, err := o.loadPartition(ctx, part)
		if err != nil {
			return Offset{}, false, err
		}
		if ok && (!found || p.Time.After(pos.Time)) {
			pos, found = p, true
		}
	}
	return pos, found, nil
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

// loadPartition reads one partition from its first offset to its high
// watermark and keeps the last value under the store's key.
func (o *Offsets) loadPartition(ctx context.Context, part int) (pos Offset, found bool, err error) {
	offsets, err := o.p.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
		o.topic: {kafka.FirstOffsetOf(part), kafka.LastOffsetOf(part)}}})
	if err != nil {
		return pos, false, fmt.Errorf("offsets of %s/%d: %w", o.topic, part, err)
	}
	po := offsets.Topics[o.topic][0]
	if po.Error != nil {
		return pos, false, fmt.Errorf("offsets of %s/%d: %w", o.topic, part, po.Error)
	}
	for next := po.FirstOffset; next < po.LastOffset; {
		res, err := o.p.client.Fetch(ctx, &kafka.FetchRequest{Topic: o.topic, Partition: part, Offset: next, MaxBytes: offsetsFetchBytes, MaxWait: time.Second})
		if err == nil {
			err = res.Error
		}
		if err != nil {
			return pos, false, fmt.Errorf("reading %s/%d at offset %d: %w", o.topic, part, next, err)
		}
		start := next
		for {
			r, err := res.Records.ReadRecord()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return pos, false, fmt.Errorf("reading %s/%d: %w", o.topic, part, err)
			}
			if r.Offset < next {
				continue
			}
			next = r.Offset + 1
			if r.Key == nil || string(readAll(r.Key)) != string(o.key) {
				continue
			}
			if r.Value == nil { // a tombstone: the position was deleted
				pos, found = Offset{}, false
				continue
			}
			if pos, err = o.decode(r); err != nil {
				return pos, false, err
			}
			found = true
		}
		if next == start { // nothing new: the rest was compacted away
			if res.HighWatermark <= next {
				break // nothing more to read now (a new leader's high watermark may lag)
			}
			next = res.HighWatermark
		}
	}
	return pos, found, nil
}

// offsetsFetchBytes is the most a fetch of the offsets topic asks for.
// Its batches are small (a position, or a transaction's marker: 80 to 250
// bytes) and kafka-go decodes each batch of a fetch into a 64 KiB page of
// its own, kept until the fetch's records are dropped: a 1 MiB fetch of a
// transactional sink's positions held some 5,000 pages, over 200 MB of
// heap (about 20 MiB of it resident) at once.
const offsetsFetchBytes = 64 << 10

// decode reads a recorded position.
func (o *Offsets) decode(r *kafka.Record) (Offset, error) {
	var v offsetValue
	if err := json.Unmarshal(readAll(r.Value), &v); err != nil {
		return Offset{}, fmt.Errorf("%w: the recorded position in %s at offset %d is not JSON {\"lsn\":…}: %w", ErrOffsetsUnusable, o.topic, r.Offset, err)
	}
	return Offset{LSN: v.LSN, Time: time.UnixMicro(v.TsUsec)}, nil
}

func readAll(b kafka.Bytes) []byte {
	out, _ := io.ReadAll(b)
	return out
}
