package kafkabatch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/segmentio/kafka-go/compress"
)

// castagnoli is the CRC-32C table record batches are summed with.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encode returns b on the wire: the batch header, then its records,
// compressed with b's codec. It computes the batch length, the CRC-32C and
// the record count; every other field is written as it is in b.
func Encode(b *Batch) ([]byte, error) {
	return AppendBatch(nil, b)
}

// AppendBatch appends b's encoding (see Encode) to dst.
func AppendBatch(dst []byte, b *Batch) ([]byte, error) {
	if len(b.Records) > math.MaxInt32 {
		return dst, fmt.Errorf("kafkabatch: encoding a batch: %d records, more than a batch holds", len(b.Records))
	}
	start := len(dst)
	dst = appendHeader(dst, b, len(b.Records))
	dst = appendRecords(dst, b.Records)
	return finish(dst, start, b.Compression())
}

// AppendMessages appends to dst the batch that Build(p, c, msgs) would
// make, encoded as Encode writes it, where msg(i) is msgs[i] for i in
// [0, n): the same bytes, without the batch's record slice or a slice of
// messages. A producer that keeps dst across batches encodes with no
// allocation (none at all without compression). It fails as Build does.
func AppendMessages(dst []byte, p Producer, c Compression, n int, msg func(i int) Message) ([]byte, error) {
	if n <= 0 {
		return dst, fmt.Errorf("kafkabatch: building a batch: no records")
	}
	if c < 0 || c > compress.Zstd {
		return dst, fmt.Errorf("kafkabatch: building a batch: unknown compression codec %d", c)
	}
	first := msg(0).Timestamp
	b := Batch{PartitionLeaderEpoch: NoPartitionLeaderEpoch, Attributes: int16(c), LastOffsetDelta: int32(n - 1),
		FirstTimestamp: first, MaxTimestamp: first, ProducerID: p.ID, ProducerEpoch: p.Epoch, BaseSequence: p.BaseSequence}
	if p.Transactional {
		b.Attributes |= AttrTransactional
	}
	start := len(dst)
	dst = appendHeader(dst, &b, n)
	for i := range n {
		m := msg(i)
		b.MaxTimestamp = max(b.MaxTimestamp, m.Timestamp)
		r := Record{TimestampDelta: m.Timestamp - first, OffsetDelta: int32(i), Key: m.Key, Value: m.Value, Headers: m.Headers}
		dst = appendRecord(dst, &r)
	}
	binary.BigEndian.PutUint64(dst[start+maxTimestampAt:], uint64(b.MaxTimestamp))
	return finish(dst, start, c)
}

// maxTimestampAt is the offset of MaxTimestamp in a batch's header.
const maxTimestampAt = 35

// appendHeader appends b's header fields for n records, the batch length
// and CRC zero until finish.
func appendHeader(dst []byte, b *Batch, n int) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.BaseOffset))
	dst = binary.BigEndian.AppendUint32(dst, 0) // batch length, in finish
	dst = binary.BigEndian.AppendUint32(dst, uint32(b.PartitionLeaderEpoch))
	dst = append(dst, Magic)
	dst = binary.BigEndian.AppendUint32(dst, 0) // CRC, in finish
	dst = binary.BigEndian.AppendUint16(dst, uint16(b.Attributes))
	dst = binary.BigEndian.AppendUint32(dst, uint32(b.LastOffsetDelta))
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.FirstTimestamp))
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.MaxTimestamp))
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.ProducerID))
	dst = binary.BigEndian.AppendUint16(dst, uint16(b.ProducerEpoch))
	dst = binary.BigEndian.AppendUint32(dst, uint32(b.BaseSequence))
	return binary.BigEndian.AppendUint32(dst, uint32(n))
}

// finish completes the batch that starts at dst[start:], its records
// written uncompressed after the header: it compresses them with codec c,
// then writes the batch length and the CRC-32C. A batch of no records is
// its header alone whatever its codec, as Kafka writes one (log compaction's
// empty batches): kafka-go's snappy writer makes no bytes of no records,
// which are no snappy block (issue 27, item 11).
func finish(dst []byte, start int, c Compression) ([]byte, error) {
	if c != 0 && len(dst) > start+headerSize {
		records := start + headerSize
		compressed, err := appendCompressed(nil, c, dst[records:])
		if err != nil {
			return dst[:start], err
		}
		dst = append(dst[:records], compressed...)
	}
	batch := dst[start:]
	if len(batch)-lengthEnd > math.MaxInt32 {
		return dst[:start], fmt.Errorf("kafkabatch: encoding a batch: %d bytes, more than a batch holds", len(batch))
	}
	binary.BigEndian.PutUint32(batch[8:], uint32(len(batch)-lengthEnd))
	binary.BigEndian.PutUint32(batch[17:], crc32.Checksum(batch[crcStart:], castagnoli))
	return dst, nil
}

// appendCompressed appends records, encoded, compressed with codec c.
func appendCompressed(dst []byte, c Compression, records []byte) ([]byte, error) {
	codec := c.Codec()
	if codec == nil {
		return dst, fmt.Errorf("kafkabatch: encoding a batch: unknown compression codec %d in its attributes", c)
	}
	var out bytes.Buffer
	w := codec.NewWriter(&out)
	if _, err := w.Write(records); err != nil {
		return dst, fmt.Errorf("kafkabatch: compressing a batch with %s: %w", codec.Name(), err)
	}
	if err := w.Close(); err != nil {
		return dst, fmt.Errorf("kafkabatch: compressing a batch with %s: %w", codec.Name(), err)
	}
	return append(dst, out.Bytes()...), nil
}

func appendRecords(dst []byte, records []Record) []byte {
	for i := range records {
		dst = appendRecord(dst, &records[i])
	}
	return dst
}

// appendRecord writes one record as DefaultRecord.writeTo does: its length,
// then attributes, the deltas, key, value and headers, lengths as zigzag
// varints and -1 for null.
func appendRecord(dst []byte, r *Record) []byte {
	dst = binary.AppendVarint(dst, int64(recordBodySize(r)))
	dst = append(dst, byte(r.Attributes))
	dst = binary.AppendVarint(dst, r.TimestampDelta)
	dst = binary.AppendVarint(dst, int64(r.OffsetDelta))
	dst = appendNullableBytes(dst, r.Key)
	dst = appendNullableBytes(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	for _, h := range r.Headers {
		dst = binary.AppendVarint(dst, int64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendNullableBytes(dst, h.Value)
	}
	return dst
}

func appendNullableBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// recordBodySize is a record's length field: its bytes after that field.
func recordBodySize(r *Record) int {
	n := 1 + varintSize(r.TimestampDelta) + varintSize(int64(r.OffsetDelta)) +
		nullableSize(r.Key) + nullableSize(r.Value) + varintSize(int64(len(r.Headers)))
	for _, h := range r.Headers {
		n += varintSize(int64(len(h.Key))) + len(h.Key) + nullableSize(h.Value)
	}
	return n
}

func nullableSize(b []byte) int {
	if b == nil {
		return 1
	}
	return varintSize(int64(len(b))) + len(b)
}

// varintSize is the length of v as a zigzag varint.
func varintSize(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}
