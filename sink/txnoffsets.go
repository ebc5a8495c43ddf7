package sink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/kafkabatch"
)

// value is the record value of pos, as Save writes it.
func (o *Offsets) value(pos Offset) ([]byte, error) {
	v, err := json.Marshal(offsetValue{LSN: pos.LSN, LSNCommit: pos.LSN, TsUsec: pos.Time.UnixMicro(), Origin: pos.Origin})
	if err != nil {
		return nil, fmt.Errorf("recording the position in %s: %w", o.topic, err)
	}
	return v, nil
}

// LoadCommitted is Load as a read_committed consumer reads: positions
// written inside Kafka transactions count only once committed, aborted
// ones never. It reads each partition up to its last stable offset and
// waits (until ctx ends) while a transaction keeps that below the high
// watermark, so that an open transaction's position is not missed.
func (o *Offsets) LoadCommitted(ctx context.Context) (pos Offset, found bool, err error) {
	parts, err := o.p.partitionCount(ctx, o.topic, false)
	if errors.Is(err, kafka.UnknownTopicOrPartition) {
		return Offset{}, false, o.create(ctx)
	}
	if err != nil {
		return Offset{}, false, o.fail(err)
	}
	for part := 0; part < parts; part++ {
		p, ok, err := o.loadCommitted(ctx, part)
		if err != nil {
			return Offset{}, false, o.fail(err)
		}
		if ok && (!found || p.Time.After(pos.Time)) {
			pos, found = p, true
		}
	}
	return pos, found, nil
}

func (o *Offsets) loadCommitted(ctx context.Context, part int) (pos Offset, found bool, err error) {
	tp := kafkabatch.TopicPartition{Topic: o.topic, Partition: part}
	offsets, err := o.p.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
		o.topic: {kafka.FirstOffsetOf(part)}}})
	if err != nil {
		return pos, false, fmt.Errorf("offsets of %s/%d: %w", o.topic, part, err)
	}
	po := offsets.Topics[o.topic][0]
	if po.Error != nil {
		return pos, false, fmt.Errorf("offsets of %s/%d: %w", o.topic, part, po.Error)
	}
	for next := po.FirstOffset; ; {
		f, err := kafkabatch.FetchCommitted(ctx, o.p.client, tp, next, 1<<20)
		if err != nil {
			return pos, false, err
		}
		for _, b := range f.Batches {
			for _, r := range b.Records {
				if string(r.Key) != string(o.key) {
					continue
				}
				if r.Value == nil {
					pos, found = Offset{}, false
					continue
				}
				var v offsetValue
				if err := json.Unmarshal(r.Value, &v); err != nil {
					return pos, false, fmt.Errorf("%w: the recorded position in %s at offset %d is not JSON {\"lsn\":…}: %w", ErrOffsetsUnusable, o.topic, b.BaseOffset+int64(r.OffsetDelta), err)
				}
				pos, found = Offset{LSN: v.LSN, Time: time.UnixMicro(v.TsUsec), Origin: v.Origin}, true
			}
		}
		switch {
		case f.Next > next:
			next = f.Next
		case f.LastStableOffset >= f.HighWatermark && next >= f.HighWatermark:
			return pos, found, nil // read to the end
		case next < f.LastStableOffset:
			next = f.LastStableOffset // the rest below it was compacted away
		default:
			// A transaction is open at next: wait for its end.
			select {
			case <-ctx.Done():
				return pos, false, fmt.Errorf("reading %s/%d read_committed: a transaction stays open at offset %d: %w", o.topic, part, next, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}
