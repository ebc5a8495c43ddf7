package kafkabatch

import (
	"fmt"
	"math"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

// Compression is the codec of a batch's records, as in the attributes' low
// three bits: kafka-go's codec numbers, which are Kafka's.
type Compression = compress.Compression

// Attribute bits of a record batch (DefaultRecordBatch).
const (
	attrCompressionMask = 0x07
	// AttrLogAppendTime: the broker set the timestamps (message.timestamp.type=LogAppendTime).
	AttrLogAppendTime = 0x08
	// AttrTransactional: the batch belongs to a transaction; read_committed
	// readers see it only once its commit marker is written.
	AttrTransactional = 0x10
	// AttrControl: the batch holds a control record (a transaction marker).
	AttrControl = 0x20
	// AttrDeleteHorizon: FirstTimestamp is the delete horizon (set by the
	// log cleaner, never by producers).
	AttrDeleteHorizon = 0x40
)

// No-producer values, as kafka-go and Java's non-idempotent producer send them.
const (
	NoProducerID           = -1
	NoProducerEpoch        = -1
	NoSequence             = -1
	NoPartitionLeaderEpoch = -1
)

// Magic is the record format version this package reads and writes.
const Magic = 2

// headerSize is the fixed part of a batch, up to and including the record
// count; the batch length field counts from offset lengthEnd.
const (
	headerSize = 61
	lengthEnd  = 12 // base offset (8) + batch length (4)
	crcStart   = 21 // the CRC covers attributes to the end of the batch
)

// Batch is one record batch, every field as it is on the wire. Decode fills
// all of them; Encode writes them as they are and computes only the batch
// length, the CRC and the record count. Build fills them the way Java's
// producer does.
type Batch struct {
	BaseOffset           int64 // producers send 0; the broker assigns
	PartitionLeaderEpoch int32 // producers send -1; the broker assigns
	Attributes           int16
	LastOffsetDelta      int32
	FirstTimestamp       int64 // ms since the epoch
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	Records              []Record
}

// Record is one record inside a batch. Key and Value: nil is null, an empty
// non-nil slice is an empty byte string.
type Record struct {
	Attributes     int8 // unused by Kafka: always 0
	TimestampDelta int64
	OffsetDelta    int32
	Key, Value     []byte
	Headers        []Header
}

// Header is one record header. A nil Value is a null header value; a key is
// never null. It is kafka-go's header type, so that a producer holding
// kafka-go headers hands them over without converting them.
type Header = kafka.Header

// Compression is the batch's codec.
func (b *Batch) Compression() Compression { return Compression(b.Attributes & attrCompressionMask) }

// Transactional reports the transactional attribute.
func (b *Batch) Transactional() bool { return b.Attributes&AttrTransactional != 0 }

// Control reports whether the batch holds a control record.
func (b *Batch) Control() bool { return b.Attributes&AttrControl != 0 }

// LastSequence is the sequence of the batch's last record, as the broker
// computes it (wrapping at math.MaxInt32), or NoSequence.
func (b *Batch) LastSequence() int32 {
	if b.BaseSequence == NoSequence {
		return NoSequence
	}
	return IncrementSequence(b.BaseSequence, b.LastOffsetDelta)
}

// IncrementSequence adds n to sequence s the way Kafka does: sequences wrap
// to 0 after math.MaxInt32 (DefaultRecordBatch.incrementSequence).
func IncrementSequence(s, n int32) int32 {
	if s > math.MaxInt32-n {
		return n - (math.MaxInt32 - s) - 1
	}
	return s + n
}

// Producer is what an idempotent or transactional producer stamps on a
// batch. The zero value is not "none": use NoProducer.
type Producer struct {
	ID            int64
	Epoch         int16
	BaseSequence  int32
	Transactional bool
}

// NoProducer stamps a batch as kafka-go and a non-idempotent Java producer do.
var NoProducer = Producer{ID: NoProducerID, Epoch: NoProducerEpoch, BaseSequence: NoSequence}

// Message is a record as a producer hands it over.
type Message struct {
	Key, Value []byte
	Headers    []Header
	Timestamp  int64 // CreateTime, ms since the epoch
}

// Build makes the batch Java's producer (MemoryRecordsBuilder) would send
// for msgs: offsets 0..n-1, the first record's timestamp as the base, the
// largest as MaxTimestamp, no partition leader epoch. It keeps references to
// msgs' bytes. It fails for no messages or a codec Kafka does not know.
func Build(p Producer, c Compression, msgs []Message) (Batch, error) {
	if len(msgs) == 0 {
		return Batch{}, fmt.Errorf("kafkabatch: building a batch: no records")
	}
	if c < 0 || c > compress.Zstd {
		return Batch{}, fmt.Errorf("kafkabatch: building a batch: unknown compression codec %d", c)
	}
	b := Batch{
		PartitionLeaderEpoch: NoPartitionLeaderEpoch,
		Attributes:           int16(c),
		LastOffsetDelta:      int32(len(msgs) - 1),
		FirstTimestamp:       msgs[0].Timestamp,
		MaxTimestamp:         msgs[0].Timestamp,
		ProducerID:           p.ID,
		ProducerEpoch:        p.Epoch,
		BaseSequence:         p.BaseSequence,
		Records:              make([]Record, len(msgs)),
	}
	if p.Transactional {
		b.Attributes |= AttrTransactional
	}
	for i, m := range msgs {
		b.MaxTimestamp = max(b.MaxTimestamp, m.Timestamp)
		b.Records[i] = Record{
			TimestampDelta: m.Timestamp - b.FirstTimestamp,
			OffsetDelta:    int32(i),
			Key:            m.Key,
			Value:          m.Value,
			Headers:        m.Headers,
		}
	}
	return b, nil
}
