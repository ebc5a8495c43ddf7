package kafkabatch

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"
	"testing/iotest"
)

// TestRecordSetReads: the produce request's records field is the batch
// prefixed by its 4-byte size, whatever sizes the reads ask for, and Reset
// starts it over.
func TestRecordSetReads(t *testing.T) {
	for _, n := range []int{0, 1, 3, 4, 5, 100, 70000} {
		batch := bytes.Repeat([]byte{0xab}, n)
		want := binary.BigEndian.AppendUint32(nil, uint32(n))
		want = append(want, batch...)
		var rs RecordSet
		for _, read := range []func(io.Reader) io.Reader{
			func(r io.Reader) io.Reader { return r },
			iotest.OneByteReader,
			iotest.HalfReader,
		} {
			rs.Reset(batch)
			got, err := io.ReadAll(read(&rs))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("batch of %d: read %d bytes (%v), want %d", n, len(got), err, len(want))
			}
		}
		rs.Reset(nil)
		if rs.batch != nil {
			t.Fatalf("Reset(nil) kept the batch")
		}
	}
}
