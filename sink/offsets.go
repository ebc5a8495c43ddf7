package sink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// Load returns the last position recorded for this connector; found is
// false when there is none (a first start). A missing topic is created,
// so that Save never waits for it. It reads as LoadCommitted does (back
// from the end, read_committed): the positions Save writes are not
// transactional, so they count at once, and a topic shared with an
// exactly-once connector never yields its aborted positions.
func (o *Offsets) Load(ctx context.Context) (pos Offset, found bool, err error) {
	return o.LoadCommitted(ctx)
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
