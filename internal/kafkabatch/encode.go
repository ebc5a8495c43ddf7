package kafkabatch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
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
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.BaseOffset))
	dst = binary.BigEndian.AppendUint32(dst, 0) // batch length, below
	dst = binary.BigEndian.AppendUint32(dst, uint32(b.PartitionLeaderEpoch))
	dst = append(dst, Magic)
	dst = binary.BigEndian.AppendUint32(dst, 0) // CRC, below
	dst = binary.BigEndian.AppendUint16(dst, uint16(b.Attributes))
	dst = binary.BigEndian.AppendUint32(dst, uint32(b.LastOffsetDelta))
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.FirstTimestamp))
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.MaxTimestamp))
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.ProducerID))
	dst = binary.BigEndian.AppendUint16(dst, uint16(b.ProducerEpoch))
	dst = binary.BigEndian.AppendUint32(dst, uint32(b.BaseSequence))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b.Records)))

	var err error
	if c := b.Compression(); c == 0 {
		dst = appendRecords(dst, b.Records)
	} else if dst, err = appendCompressed(dst, c, b.Records); err != nil {
		return dst[:start], err
	}

	batch := dst[start:]
	if len(batch)-lengthEnd > math.MaxInt32 {
		return dst[:start], fmt.Errorf("kafkabatch: encoding a batch: %d bytes, more than a batch holds", len(batch))
	}
	binary.BigEndian.PutUint32(batch[8:], uint32(len(batch)-lengthEnd))
	binary.BigEndian.PutUint32(batch[17:], crc32.Checksum(batch[crcStart:], castagnoli))
	return dst, nil
}

// appendCompressed appends records compressed with codec c.
func appendCompressed(dst []byte, c Compression, records []Record) ([]byte, error) {
	codec := c.Codec()
	if codec == nil {
		return dst, fmt.Errorf("kafkabatch: encoding a batch: unknown compression codec %d in its attributes", c)
	}
	var out bytes.Buffer
	w := codec.NewWriter(&out)
	if _, err := w.Write(appendRecords(nil, records)); err != nil {
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
