package kafkabatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go/compress"
)

func TestRoundTrip(t *testing.T) {
	msgs := []Message{
		{Key: []byte("k"), Value: []byte("v"), Timestamp: 1_700_000_000_000},
		{Key: nil, Value: []byte{}, Timestamp: 1_699_999_999_000, Headers: []Header{{Key: "a", Value: nil}, {Key: "", Value: []byte{}}}},
		{Key: []byte{}, Value: nil, Timestamp: math.MaxInt64 / 2},
		{Value: []byte(strings.Repeat("big ", 10_000)), Timestamp: 0},
	}
	producers := map[string]Producer{
		"none":          NoProducer,
		"idempotent":    {ID: 42, Epoch: 3, BaseSequence: 17},
		"transactional": {ID: math.MaxInt64, Epoch: math.MaxInt16, BaseSequence: math.MaxInt32 - 1, Transactional: true},
	}
	for name, p := range producers {
		for c := compress.None; c <= compress.Zstd; c++ {
			t.Run(name+"/"+c.String(), func(t *testing.T) {
				b, err := Build(p, c, msgs)
				if err != nil {
					t.Fatal(err)
				}
				enc, err := Encode(&b)
				if err != nil {
					t.Fatal(err)
				}
				got, n, err := Decode(append(enc, 0xff)) // a byte of the next batch
				if err != nil {
					t.Fatal(err)
				}
				if n != len(enc) {
					t.Errorf("Decode took %d bytes of a %d-byte batch", n, len(enc))
				}
				if !reflect.DeepEqual(got, b) {
					t.Errorf("round trip:\n got %+v\nwant %+v", got, b)
				}
				if got.Transactional() != p.Transactional || got.ProducerID != p.ID || got.ProducerEpoch != p.Epoch || got.BaseSequence != p.BaseSequence {
					t.Errorf("producer fields: got id %d epoch %d seq %d txn %v, want %+v", got.ProducerID, got.ProducerEpoch, got.BaseSequence, got.Transactional(), p)
				}
			})
		}
	}
}

func TestBuild(t *testing.T) {
	b, err := Build(Producer{ID: 7, Epoch: 1, BaseSequence: 5, Transactional: true}, compress.Gzip, []Message{
		{Timestamp: 100}, {Timestamp: 300}, {Timestamp: 50},
	})
	if err != nil {
		t.Fatal(err)
	}
	if b.FirstTimestamp != 100 || b.MaxTimestamp != 300 || b.LastOffsetDelta != 2 || b.PartitionLeaderEpoch != -1 || b.BaseOffset != 0 {
		t.Errorf("header: %+v", b)
	}
	if b.Attributes != AttrTransactional|int16(compress.Gzip) {
		t.Errorf("attributes %#x", b.Attributes)
	}
	for i, want := range []int64{0, 200, -50} {
		if r := b.Records[i]; r.TimestampDelta != want || r.OffsetDelta != int32(i) {
			t.Errorf("record %d: delta %d offset %d, want %d %d", i, r.TimestampDelta, r.OffsetDelta, want, i)
		}
	}
	if b.LastSequence() != 7 {
		t.Errorf("last sequence %d, want 7", b.LastSequence())
	}
	if _, err := Build(NoProducer, 0, nil); err == nil {
		t.Error("Build of no messages: no error")
	}
	if _, err := Build(NoProducer, 5, []Message{{}}); err == nil {
		t.Error("Build with codec 5: no error")
	}
}

func TestIncrementSequence(t *testing.T) {
	for _, c := range []struct{ s, n, want int32 }{
		{0, 0, 0}, {0, 5, 5}, {math.MaxInt32 - 1, 1, math.MaxInt32}, {math.MaxInt32, 1, 0}, {math.MaxInt32 - 2, 5, 2},
	} {
		if got := IncrementSequence(c.s, c.n); got != c.want {
			t.Errorf("IncrementSequence(%d, %d) = %d, want %d", c.s, c.n, got, c.want)
		}
	}
}

// reCRC rewrites b's CRC after a test changed its bytes, so that the check
// under test is the one after the CRC.
func reCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[crcStart:], castagnoli))
	return b
}

func TestDecodeRefuses(t *testing.T) {
	good, err := Build(Producer{ID: 1, Epoch: 0, BaseSequence: 0}, 0, []Message{{Key: []byte("key"), Value: []byte("value"), Headers: []Header{{Key: "h", Value: []byte("v")}}}})
	if err != nil {
		t.Fatal(err)
	}
	enc, err := Encode(&good)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), enc...)) }
	setCount := func(n uint32) []byte {
		return edit(func(b []byte) []byte { binary.BigEndian.PutUint32(b[57:], n); return reCRC(b) })
	}
	cases := map[string]struct {
		in   []byte
		want string
	}{
		"empty":            {nil, "truncated"},
		"short header":     {enc[:60], "truncated"},
		"cut in records":   {enc[:len(enc)-1], "truncated"},
		"bad crc":          {edit(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), "CRC-32C"},
		"magic 1":          {edit(func(b []byte) []byte { b[16] = 1; return b }), "magic byte 1"},
		"length too small": {edit(func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 10); return b }), "below the header"},
		"negative count":   {setCount(math.MaxUint32), "record count -1"},
		"count too large":  {setCount(1000), "does not fit"},
		"count too small":  {setCount(0), "bytes after the last"},
		"codec 7":          {edit(func(b []byte) []byte { b[22] |= 7; return reCRC(b) }), "unknown compression codec 7"},
		"gzip garbage":     {edit(func(b []byte) []byte { b[22] |= 1; return reCRC(b) }), "decompressing"},
		"record length past the end": {edit(func(b []byte) []byte {
			b[headerSize] = 0x7e // zigzag 63
			return reCRC(b)
		}), "record length 63"},
		"key length past the record": {edit(func(b []byte) []byte {
			b[headerSize+4] = 0x7e
			return reCRC(b)
		}), "key length 63"},
		"null header key": {edit(func(b []byte) []byte {
			i := len(b) - 4 // the record ends: key length, "h", value length, "v"
			b[i] = 0x01     // -1
			return reCRC(b)
		}), "null key"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := Decode(c.in)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Decode: %v, want an error with %q", err, c.want)
			}
			if c.want == "truncated" && !errors.Is(err, ErrTruncated) {
				t.Errorf("%v is not ErrTruncated", err)
			}
		})
	}
}

func TestDecodeAllStopsAtTheCut(t *testing.T) {
	b, err := Build(NoProducer, 0, []Message{{Value: []byte("one")}})
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := Encode(&b)
	two := append(append([]byte(nil), enc...), enc[:len(enc)-3]...)
	got, err := DecodeAll(two)
	if !errors.Is(err, ErrTruncated) || len(got) != 1 {
		t.Fatalf("DecodeAll of a batch and a cut one: %d batches, %v", len(got), err)
	}
}

// Regression: kafka-go's snappy reader allocated the block length a xerial
// frame claims before reading it; a 147-byte batch (found by FuzzDecode,
// testdata/fuzz/FuzzDecode/7b27fa2b621c0001) claimed 1.2 GB and got the
// fuzzer's worker killed. The claim is now checked against the bytes.
func TestSnappyFrameLongerThanTheBatch(t *testing.T) {
	body := append(append([]byte(nil), xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)
	body = append(body, 0x47, 0x01, 0x00, 0x32, 'x')
	b := make([]byte, headerSize, headerSize+len(body))
	binary.BigEndian.PutUint32(b[8:], uint32(headerSize-lengthEnd+len(body)))
	b[16] = Magic
	b[22] = byte(compress.Snappy)
	binary.BigEndian.PutUint32(b[57:], 1)
	b = reCRC(append(b, body...))
	_, _, err := Decode(b)
	if err == nil || !strings.Contains(err.Error(), "xerial block of 1191247922 bytes with 1 left") {
		t.Fatalf("Decode: %v", err)
	}
}

// Regression: the decoder allocated room for the record count a batch
// claims once the decompressed records were long enough to hold it at 7
// bytes a record: a few KiB of gzip made it allocate 96 bytes per claimed
// record, hundreds of MiB, and FuzzDecode's workers died. Room now grows
// with the records actually read.
func TestClaimedCountAllocatesNothing(t *testing.T) {
	var zeros bytes.Buffer
	w := compress.Gzip.Codec().NewWriter(&zeros)
	if _, err := w.Write(make([]byte, 8<<20)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, headerSize, headerSize+zeros.Len())
	b = append(b, zeros.Bytes()...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-lengthEnd))
	b[16] = Magic
	b[22] = byte(compress.Gzip)
	binary.BigEndian.PutUint32(b[57:], (8<<20)/minRecordSize)
	reCRC(b)

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := Decode(b)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "record 0") {
		t.Fatalf("Decode: %v, want an error in record 0", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 48<<20 {
		t.Errorf("Decode allocated %d MiB for 8 MiB of records", n>>20)
	}
}

// TestAppendMessagesMatchesBuild: AppendMessages writes the bytes
// Encode(Build(...)) writes, after whatever dst holds, for every codec and
// producer stamp (timestamps out of order, null and empty keys, values and
// headers), and allocates nothing without compression once dst has room.
func TestAppendMessagesMatchesBuild(t *testing.T) {
	msgs := []Message{
		{Key: []byte("k"), Value: []byte("v"), Timestamp: 1_700_000_000_000},
		{Key: nil, Value: []byte{}, Timestamp: 1_699_999_999_000, Headers: []Header{{Key: "a", Value: nil}, {Key: "", Value: []byte{}}}},
		{Key: []byte{}, Value: nil, Timestamp: 1_700_000_000_500},
		{Value: []byte(strings.Repeat("big ", 10_000)), Timestamp: 0, Headers: []Header{{Key: "id", Value: []byte("e-1")}}},
	}
	msg := func(i int) Message { return msgs[i] }
	for _, p := range []Producer{NoProducer, {ID: 42, Epoch: 3, BaseSequence: 17}, {ID: 9, Epoch: 1, BaseSequence: math.MaxInt32 - 1, Transactional: true}} {
		for c := compress.None; c <= compress.Zstd; c++ {
			for n := 1; n <= len(msgs); n++ {
				b, err := Build(p, c, msgs[:n])
				if err != nil {
					t.Fatal(err)
				}
				want, err := Encode(&b)
				if err != nil {
					t.Fatal(err)
				}
				prefix := []byte("request header")
				got, err := AppendMessages(append([]byte(nil), prefix...), p, c, n, msg)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], want) {
					t.Errorf("%+v %s %d messages: AppendMessages differs from Encode(Build)", p, c, n)
				}
			}
		}
	}
	if _, err := AppendMessages(nil, NoProducer, 0, 0, msg); err == nil {
		t.Error("no messages: no error")
	}
	if _, err := AppendMessages(nil, NoProducer, compress.Zstd+1, 1, msg); err == nil {
		t.Error("unknown codec: no error")
	}
	buf := make([]byte, 0, 1<<16)
	if allocs := testing.AllocsPerRun(100, func() {
		buf, _ = AppendMessages(buf[:0], Producer{ID: 1, BaseSequence: 0}, compress.None, len(msgs), msg)
	}); allocs != 0 {
		t.Errorf("AppendMessages into a buffer with room: %v allocations, want 0", allocs)
	}
}
