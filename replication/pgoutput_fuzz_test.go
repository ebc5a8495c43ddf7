package replication

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// capturedFrameDirs hold pgoutput messages captured from a real server, one
// raw message (the WALData of one XLogData frame) per file. They seed the
// fuzzer when present.
var capturedFrameDirs = []string{
	filepath.Join("testdata", "pgoutput"),
	filepath.Join("..", "testdata", "pgoutput"),
}

func capturedFrames(t testing.TB) [][]byte {
	var frames [][]byte
	for _, dir := range capturedFrameDirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatalf("reading captured frames: %v", err)
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatalf("reading captured frames: %v", err)
			}
			frames = append(frames, b)
		}
	}
	return frames
}

// FuzzDecode checks that no input makes Decode panic, that every failure is
// a *DecodeError pointing inside the frame, and that a reused Message never
// changes the outcome of a decode.
func FuzzDecode(f *testing.F) {
	for _, tc := range validFrames() {
		f.Add([]byte(tc.frame))
	}
	f.Add([]byte(outboxRelationFrame(16385)))
	f.Add([]byte(outboxInsertFrame(16385)))
	for _, b := range capturedFrames(f) {
		f.Add(b)
	}
	var reused Message // shared across inputs, as the stream shares it across frames
	f.Fuzz(func(t *testing.T, b []byte) {
		var fresh Message
		err := Decode(b, &fresh)
		if errReused := Decode(b, &reused); (err == nil) != (errReused == nil) {
			t.Fatalf("fresh Message: %v; reused Message: %v", err, errReused)
		}
		if err == nil {
			checkDecoded(t, b, &fresh)
			return
		}
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("error %v (%T) is not a *DecodeError", err, err)
		}
		if de.Offset < 0 || de.Offset > len(b) {
			t.Fatalf("offset %d outside the %d-byte frame: %v", de.Offset, len(b), err)
		}
	})
}

// checkDecoded checks what every successful decode must satisfy.
func checkDecoded(t *testing.T, b []byte, m *Message) {
	t.Helper()
	if m.Type != MessageType(b[0]) {
		t.Fatalf("Type %v, frame starts with %q", m.Type, b[0])
	}
	var tuples []*Tuple
	switch m.Type {
	case MessageInsert:
		tuples = []*Tuple{&m.Insert.New}
	case MessageUpdate:
		tuples = []*Tuple{&m.Update.Old, &m.Update.New}
	case MessageDelete:
		tuples = []*Tuple{&m.Delete.Old}
	}
	for _, tup := range tuples {
		for i, c := range tup.Columns {
			hasData := c.Kind == ColumnText || c.Kind == ColumnBinary
			if !hasData && c.Kind != ColumnNull && c.Kind != ColumnUnchanged {
				t.Fatalf("column %d has kind %q", i, c.Kind)
			}
			if !hasData && c.Data != nil {
				t.Fatalf("column %d of kind %q carries data", i, c.Kind)
			}
		}
	}
}
