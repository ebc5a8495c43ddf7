package kafkabatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// MaxRecordsBytes bounds the records of one batch after decompression, so a
// small compressed batch cannot make the decoder allocate without end: 16
// times what a broker accepts in one batch by default (message.max.bytes,
// 1 MiB). Decoded, records take at most about 14 times their bytes (a
// Record is 96 bytes, the smallest record on the wire 7), so one batch
// costs at most some 250 MiB; FuzzDecode found the bound of 100 MiB too
// high (its workers died).
const MaxRecordsBytes = 16 << 20

// ErrTruncated: the bytes end inside a batch. A fetch response may end so
// (the broker cuts at max.bytes); everything before the cut decoded fine.
var ErrTruncated = errors.New("kafkabatch: batch truncated")

// minRecordSize is the smallest record on the wire: its length and six
// one-byte fields (attributes, two deltas, key, value, header count).
const minRecordSize = 7

// Decode reads the batch at the start of b and returns it with the number
// of bytes it took. Keys, values and header values of an uncompressed batch
// point into b. It checks the magic byte, every length and the CRC-32C;
// a b that ends inside the batch gives ErrTruncated.
func Decode(b []byte) (Batch, int, error) {
	if len(b) < headerSize {
		return Batch{}, 0, fmt.Errorf("%w: %d bytes, a batch header takes %d", ErrTruncated, len(b), headerSize)
	}
	length := int32(binary.BigEndian.Uint32(b[8:]))
	if length < headerSize-lengthEnd {
		return Batch{}, 0, fmt.Errorf("kafkabatch: decoding a batch: batch length %d is below the header's %d", length, headerSize-lengthEnd)
	}
	if magic := b[16]; magic != Magic {
		return Batch{}, 0, fmt.Errorf("kafkabatch: decoding a batch: magic byte %d, only %d (Kafka 0.11 and later) is read", int8(magic), Magic)
	}
	size := lengthEnd + int(length)
	if len(b) < size {
		return Batch{}, 0, fmt.Errorf("%w: %d bytes of a %d-byte batch", ErrTruncated, len(b), size)
	}
	raw := b[:size]
	if want, got := binary.BigEndian.Uint32(raw[17:]), crc32.Checksum(raw[crcStart:], castagnoli); want != got {
		return Batch{}, 0, fmt.Errorf("kafkabatch: decoding a batch: CRC-32C is %#08x, its header says %#08x (corrupt)", got, want)
	}
	bt := Batch{
		BaseOffset:           int64(binary.BigEndian.Uint64(raw[0:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(raw[12:])),
		Attributes:           int16(binary.BigEndian.Uint16(raw[21:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(raw[23:])),
		FirstTimestamp:       int64(binary.BigEndian.Uint64(raw[27:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(raw[35:])),
		ProducerID:           int64(binary.BigEndian.Uint64(raw[43:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(raw[51:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(raw[53:])),
	}
	count := int32(binary.BigEndian.Uint32(raw[57:]))
	if count < 0 {
		return Batch{}, 0, fmt.Errorf("kafkabatch: decoding a batch: record count %d", count)
	}
	body := raw[headerSize:]
	// A batch of no records with no body is empty with any codec: Kafka
	// writes an empty batch as its header alone (Encode too) and
	// decompresses nothing for it (issue 27, item 11).
	if c := bt.Compression(); c != 0 && (count > 0 || len(body) > 0) {
		var err error
		if body, err = decompress(c, body); err != nil {
			return Batch{}, 0, err
		}
	}
	records, err := decodeRecords(body, int(count))
	if err != nil {
		return Batch{}, 0, fmt.Errorf("kafkabatch: decoding the batch at offset %d: %w", bt.BaseOffset, err)
	}
	bt.Records = records
	return bt, size, nil
}

// DecodeAll decodes consecutive batches, as a log segment or a fetch
// response's records hold them. On an error it returns the batches before it.
func DecodeAll(b []byte) ([]Batch, error) {
	var batches []Batch
	for len(b) > 0 {
		bt, n, err := Decode(b)
		if err != nil {
			return batches, err
		}
		batches = append(batches, bt)
		b = b[n:]
	}
	return batches, nil
}

// decodeRecords reads exactly count records that fill body.
func decodeRecords(body []byte, count int) ([]Record, error) {
	if count > len(body)/minRecordSize {
		return nil, fmt.Errorf("record count %d does not fit in %d bytes of records", count, len(body))
	}
	// Room grows with the records actually read, not with the count a
	// batch claims.
	var records []Record
	if count > 0 {
		records = make([]Record, 0, min(count, 1024))
	}
	d := decoder{b: body}
	for i := range count {
		records = append(records, Record{})
		if err := d.record(&records[i]); err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%d bytes after the last of %d records", len(d.b), count)
	}
	return records, nil
}

// decoder reads the fields of records, each bounds-checked against b.
type decoder struct {
	b []byte
}

func (d *decoder) record(r *Record) error {
	length, err := d.varint32("record length")
	if err != nil {
		return err
	}
	if length < 0 || int(length) > len(d.b) {
		return fmt.Errorf("record length %d with %d bytes left", length, len(d.b))
	}
	rd := decoder{b: d.b[:length]}
	d.b = d.b[length:]
	if err := rd.recordBody(r); err != nil {
		return err
	}
	if len(rd.b) != 0 {
		return fmt.Errorf("%d bytes after the fields of a %d-byte record", len(rd.b), length)
	}
	return nil
}

func (d *decoder) recordBody(r *Record) error {
	if len(d.b) == 0 {
		return errors.New("record attributes: no bytes left")
	}
	r.Attributes = int8(d.b[0])
	d.b = d.b[1:]
	var err error
	if r.TimestampDelta, err = d.varint64("timestamp delta"); err != nil {
		return err
	}
	if r.OffsetDelta, err = d.varint32("offset delta"); err != nil {
		return err
	}
	if r.Key, err = d.nullableBytes("key"); err != nil {
		return err
	}
	if r.Value, err = d.nullableBytes("value"); err != nil {
		return err
	}
	n, err := d.varint32("header count")
	if err != nil {
		return err
	}
	if n < 0 || int(n) > len(d.b)/2 { // a header takes 2 bytes at least
		return fmt.Errorf("header count %d with %d bytes left", n, len(d.b))
	}
	if n > 0 {
		r.Headers = make([]Header, 0, min(n, 64))
	}
	for i := range n {
		key, err := d.nullableBytes("header key")
		if err != nil {
			return err
		}
		if key == nil {
			return fmt.Errorf("header %d: null key", i)
		}
		value, err := d.nullableBytes("header value")
		if err != nil {
			return err
		}
		r.Headers = append(r.Headers, Header{Key: string(key), Value: value})
	}
	return nil
}

func (d *decoder) varint64(what string) (int64, error) {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		return 0, fmt.Errorf("%s: bad or truncated varint", what)
	}
	d.b = d.b[n:]
	return v, nil
}

func (d *decoder) varint32(what string) (int32, error) {
	v, err := d.varint64(what)
	if err != nil {
		return 0, err
	}
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, fmt.Errorf("%s: %d does not fit in 32 bits", what, v)
	}
	return int32(v), nil
}

// nullableBytes reads a varint length and that many bytes; -1 is null.
func (d *decoder) nullableBytes(what string) ([]byte, error) {
	n, err := d.varint32(what + " length")
	if err != nil {
		return nil, err
	}
	if n == -1 {
		return nil, nil
	}
	if n < 0 || int(n) > len(d.b) {
		return nil, fmt.Errorf("%s length %d with %d bytes left", what, n, len(d.b))
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v, nil
}
