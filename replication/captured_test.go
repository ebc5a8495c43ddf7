package replication

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCapturedFrames decodes every frame captured from a real server
// (go run ./internal/testbed/capturepgoutput) and checks that the shapes the
// stream depends on are there and decode as expected.
func TestCapturedFrames(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "pgoutput", "*.bin"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no captured frames in testdata/pgoutput (%v)", err)
	}
	seen := map[MessageType]int{}
	var keyOld, fullOld, unchanged, binaryCols int
	var m Message
	for _, f := range files {
		frame, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := Decode(frame, &m); err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		seen[m.Type]++
		if m.Type == MessageUpdate {
			switch m.Update.OldKind {
			case OldTupleKey:
				keyOld++
			case OldTupleFull:
				fullOld++
			}
			for _, c := range m.Update.New.Columns {
				if c.Kind == ColumnUnchanged {
					unchanged++
				}
			}
		}
		if m.Type == MessageInsert {
			for _, c := range m.Insert.New.Columns {
				if c.Kind == ColumnBinary {
					binaryCols++
				}
			}
		}
	}
	for _, want := range []MessageType{MessageBegin, MessageCommit, MessageOrigin, MessageRelation, MessageDataType,
		MessageInsert, MessageUpdate, MessageDelete, MessageTruncate, MessageLogical} {
		if seen[want] == 0 {
			t.Errorf("no %s frame among the captured ones", want)
		}
	}
	if keyOld == 0 || fullOld == 0 || unchanged == 0 {
		t.Errorf("updates: %d with a key old tuple, %d with a full one, %d unchanged TOAST columns; want each at least once", keyOld, fullOld, unchanged)
	}
	if binaryCols != 0 {
		t.Errorf("%d binary columns: the relay asks for text format only", binaryCols)
	}
}
