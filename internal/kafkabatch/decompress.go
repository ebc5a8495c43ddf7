package kafkabatch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/segmentio/kafka-go/compress"
)

// decompress returns the records of a compressed batch, at most
// MaxRecordsBytes of them. The whole compressed body is in memory, so every
// length a codec's framing claims is checked against it before anything is
// allocated: kafka-go's snappy reader allocates the xerial frame length it
// reads (a 147-byte batch made it ask for 1.2 GB, found by FuzzDecode), and
// zstd's default memory limit is far above MaxRecordsBytes.
func decompress(c Compression, body []byte) ([]byte, error) {
	var out []byte
	var err error
	switch c {
	case compress.Snappy:
		out, err = unsnappy(body)
	case compress.Zstd:
		out, err = unzstd(body)
	case compress.Gzip, compress.Lz4:
		out, err = readLimited(c, body)
	default:
		return nil, fmt.Errorf("kafkabatch: decoding a batch: unknown compression codec %d in its attributes", c)
	}
	if err != nil {
		return nil, fmt.Errorf("kafkabatch: decompressing a batch with %s: %w", c, err)
	}
	return out, nil
}

// readLimited streams body through kafka-go's codec (gzip, lz4: their
// buffers are bounded by the format) and stops past MaxRecordsBytes.
func readLimited(c Compression, body []byte) ([]byte, error) {
	r := c.Codec().NewReader(bytes.NewReader(body))
	defer r.Close()
	out, err := io.ReadAll(io.LimitReader(r, MaxRecordsBytes+1))
	if err != nil {
		return nil, err
	}
	if len(out) > MaxRecordsBytes {
		return nil, fmt.Errorf("records exceed %d bytes", MaxRecordsBytes)
	}
	return out, nil
}

func unzstd(body []byte) ([]byte, error) {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(MaxRecordsBytes))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.DecodeAll(body, nil)
}

// xerialMagic starts the framing Java's snappy-java (SnappyOutputStream)
// writes: the magic, then a version and a compatible version (int32 each),
// then blocks, each an int32 length and a snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

// unsnappy decodes xerial-framed snappy, or one raw snappy block (what
// snappy-java's SnappyInputStream also accepts).
func unsnappy(body []byte) ([]byte, error) {
	if len(body) < xerialHeaderSize || !bytes.Equal(body[:len(xerialMagic)], xerialMagic) {
		return appendSnappyBlock(nil, body)
	}
	var out []byte
	for rest := body[xerialHeaderSize:]; len(rest) > 0; {
		if len(rest) < 4 {
			return nil, fmt.Errorf("xerial block length cut after %d bytes", len(rest))
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return nil, fmt.Errorf("xerial block of %d bytes with %d left", n, len(rest))
		}
		var err error
		if out, err = appendSnappyBlock(out, rest[:n]); err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	return out, nil
}

func appendSnappyBlock(out, block []byte) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return nil, err
	}
	if n > MaxRecordsBytes-len(out) {
		return nil, fmt.Errorf("records exceed %d bytes", MaxRecordsBytes)
	}
	dec, err := snappy.Decode(make([]byte, n), block)
	if err != nil {
		return nil, err
	}
	return append(out, dec...), nil
}
