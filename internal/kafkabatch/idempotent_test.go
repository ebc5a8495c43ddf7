package kafkabatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

// TestIdempotentProduceOnBed: batches encoded here, one per codec, with a
// producer id from InitProducerId (no transactional.id: an idempotent
// producer). Each is sent twice, as a retry after a lost answer would: the
// broker keeps one copy and answers the retry with the first offset. A
// batch that skips a sequence is refused with OUT_OF_ORDER_SEQUENCE_NUMBER.
func TestIdempotentProduceOnBed(t *testing.T) {
	c, topic := bedClient(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A fresh broker answers COORDINATOR_LOAD_IN_PROGRESS while it loads
	// its transaction state: retry, as a producer does.
	var res *kafka.InitProducerIDResponse
	var err error
	for {
		res, err = c.InitProducerID(ctx, &kafka.InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1})
		if err == nil {
			err = res.Error
		}
		if !errors.Is(err, kafka.GroupLoadInProgress) && !errors.Is(err, kafka.GroupCoordinatorNotAvailable) || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	must(t, "InitProducerId", err)
	p := Producer{ID: int64(res.Producer.ProducerID), Epoch: int16(res.Producer.ProducerEpoch)}

	var want []string
	offset := int64(0)
	for codec := compress.None; codec <= compress.Zstd; codec++ {
		vs := []string{codec.String() + "-0", codec.String() + "-1", codec.String() + "-2"}
		b, err := Build(p, codec, values(vs...))
		must(t, "Build", err)
		enc, err := Encode(&b)
		must(t, "Encode", err)
		for attempt := range 2 {
			r, err := ProduceBatch(ctx, c, topic, 0, "", enc)
			must(t, fmt.Sprintf("%s batch, attempt %d", codec, attempt+1), err)
			if r.Error != nil && !errors.Is(r.Error, kafka.DuplicateSequenceNumber) {
				t.Fatalf("%s batch, attempt %d: %v", codec, attempt+1, r.Error)
			}
			if r.BaseOffset != offset {
				t.Errorf("%s batch, attempt %d: offset %d, want %d", codec, attempt+1, r.BaseOffset, offset)
			}
		}
		want = append(want, vs...)
		offset += int64(len(vs))
		p.BaseSequence += int32(len(vs))
	}

	p.BaseSequence++ // one sequence skipped
	b, err := Build(p, compress.None, values("gap"))
	must(t, "Build", err)
	enc, err := Encode(&b)
	must(t, "Encode", err)
	r, err := ProduceBatch(ctx, c, topic, 0, "", enc)
	must(t, "the batch after a gap", err)
	if !errors.Is(r.Error, kafka.OutOfOrderSequenceNumber) {
		t.Errorf("the batch after a gap: %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", r.Error)
	}

	if got := readUncommitted(t, c, TopicPartition{topic, 0}); !slices.Equal(got, want) {
		t.Errorf("the partition holds %q, want %q (each once)", got, want)
	}
}
