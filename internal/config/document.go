package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// utf8BOM is the byte-order mark some editors write at the start of a
// UTF-8 file. Kafka Connect's Jackson skips it; so does Parse.
const utf8BOM = "\xef\xbb\xbf"

// emptyFile is the error of a file that holds no JSON at all.
const emptyFile = `file is empty: write the connector JSON, {"name": "…", "config": {…}} as registered with Kafka Connect, or the bare config map`

// prepare returns the document of a connector file: without a UTF-8
// byte-order mark, refused when it is empty or not valid UTF-8 (which
// encoding/json would silently replace with U+FFFD).
func prepare(data []byte) ([]byte, error) {
	data = bytes.TrimPrefix(data, []byte(utf8BOM))
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New(emptyFile)
	}
	if !utf8.Valid(data) {
		off := invalidUTF8(data)
		line, col := position(data, off)
		return nil, fmt.Errorf("line %d, column %d: byte 0x%02x is not UTF-8; save the file as UTF-8 (a value may also be written with \\u escapes)", line, col, data[off])
	}
	return data, nil
}

// invalidUTF8 returns the offset of the first byte that is not UTF-8.
func invalidUTF8(data []byte) int64 {
	for off := 0; off < len(data); {
		r, n := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && n <= 1 {
			return int64(off)
		}
		off += n
	}
	return int64(len(data))
}

// position returns the 1-based line and column (in characters) of byte
// offset off of data.
func position(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	return line, utf8.RuneCount(before[lineStart:]) + 1
}

// jsonError describes an error of decoding data with dec, naming the line
// and column where it happened. A syntax error is located by validating
// the whole document again, which finds the very character (the stream
// decoder reports where the value it was reading began). The message
// never quotes a value: encoding/json names only the bad character.
func jsonError(data []byte, dec *json.Decoder, err error) error {
	var syntax *json.SyntaxError
	if errors.As(json.Unmarshal(data, new(json.RawMessage)), &syntax) {
		if strings.HasPrefix(syntax.Error(), "unexpected end of JSON input") {
			err = io.ErrUnexpectedEOF
		} else {
			line, col := position(data, syntax.Offset-1)
			return fmt.Errorf("line %d, column %d: %w", line, col, syntax)
		}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		line, col := position(data, int64(len(data)))
		return fmt.Errorf("line %d, column %d: the file ends before the JSON is complete; close every string, [ and {", line, col)
	}
	line, col := position(data, dec.InputOffset())
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}
