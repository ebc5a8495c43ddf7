package kafkabatch

import (
	"encoding/binary"
	"reflect"
	"testing"
)

// FuzzDecode: Decode never panics and never reads past its input, and any
// batch it accepts encodes back to bytes that decode to the same batch.
// The seeds are the batches Kafka's Java producer wrote (testdata/java).
// Each input is also tried with its batch length and CRC made right, or
// the fuzzer would hardly ever get past the CRC to the records.
func FuzzDecode(f *testing.F) {
	for _, topic := range javaTopics {
		seg := readSegment(&testing.T{}, topic)
		for len(seg) > 0 {
			_, n, err := Decode(seg)
			if err != nil {
				f.Fatalf("%s: %v", topic, err)
			}
			f.Add(seg[:n])
			seg = seg[n:]
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		roundTrip(t, data)
		if len(data) >= headerSize {
			fixed := append([]byte(nil), data...)
			binary.BigEndian.PutUint32(fixed[8:], uint32(len(fixed)-lengthEnd))
			roundTrip(t, reCRC(fixed))
		}
	})
}

func roundTrip(t *testing.T, data []byte) {
	b, n, err := Decode(data)
	if err != nil {
		return
	}
	if n < headerSize || n > len(data) {
		t.Fatalf("Decode took %d bytes of %d", n, len(data))
	}
	enc, err := Encode(&b)
	if err != nil {
		t.Fatalf("Encode of a decoded batch: %v", err)
	}
	again, m, err := Decode(enc)
	if err != nil {
		t.Fatalf("Decode of the re-encoded batch: %v", err)
	}
	if m != len(enc) {
		t.Fatalf("Decode took %d bytes of the %d re-encoded", m, len(enc))
	}
	if !reflect.DeepEqual(again, b) {
		t.Fatalf("round trip changed the batch:\nfirst  %+v\nsecond %+v", b, again)
	}
}
