package kafkabatch

import (
	"reflect"
	"testing"

	"github.com/segmentio/kafka-go/compress"
)

// Regression (issue 27, item 11): a snappy batch with zero records encoded
// to a header and no body, which the decoder then refused as corrupt snappy
// (found by FuzzDecode, testdata/fuzz/FuzzDecode/fee42a7945c5c4c8). Kafka
// writes an empty batch (what log compaction leaves to keep a producer's
// state) as its header alone, and its reader never decompresses a batch
// whose record count is 0: with every codec, a batch of no records encodes
// to its header only and decodes back to the same batch.
func TestEmptyBatchRoundTrip(t *testing.T) {
	for _, c := range []Compression{0, compress.Gzip, compress.Snappy, compress.Lz4, compress.Zstd} {
		b := Batch{BaseOffset: 42, PartitionLeaderEpoch: 3, Attributes: int16(c) | AttrTransactional, LastOffsetDelta: 4,
			FirstTimestamp: 1000, MaxTimestamp: 2000, ProducerID: 7, ProducerEpoch: 1, BaseSequence: 5}
		enc, err := Encode(&b)
		if err != nil {
			t.Fatalf("%s: Encode of an empty batch: %v", c, err)
		}
		if len(enc) != headerSize {
			t.Errorf("%s: an empty batch encodes to %d bytes; want its %d-byte header alone, as Kafka writes it", c, len(enc), headerSize)
		}
		got, n, err := Decode(enc)
		if err != nil {
			t.Fatalf("%s: Decode of an encoded empty batch: %v", c, err)
		}
		if n != len(enc) || !reflect.DeepEqual(got, b) {
			t.Errorf("%s: decoded %d of %d bytes to %+v; want %+v", c, n, len(enc), got, b)
		}
	}
}
