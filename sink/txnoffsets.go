package sink

import (
	"cmp"
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

// loadWindow is how many offsets before a partition's end LoadCommitted
// reads first. A transactional sink writes a position per Kafka
// transaction, hundreds a second, and compaction leaves the active
// segment alone (up to segment.bytes, 1 GiB by default): read from the
// start, the topic cost seconds and tens of MiB at every start. The last
// position is near the end; the window widens (4 times each step) only
// while it holds no record under the key (a topic shared with other
// connectors), down to the partition's start.
const loadWindow = 4096

// loadCommitted is the last position under the key in one partition:
// the newest window is read to the end, the older ones only when the
// newer held nothing under the key.
func (o *Offsets) loadCommitted(ctx context.Context, part int) (pos Offset, found bool, err error) {
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
