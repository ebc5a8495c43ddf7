package replication

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/outboxrelay/outboxrelay/capture"
)

// Regression (issue 17, item 3): under exactly-once the start warned that
// the events between the slot and the recorded position "are sent again",
// although the relay skips them (what Kafka committed); the slot lags the
// recorded position there as a rule.
//
// Since issue 25 both guarantees skip what the recorded position covers
// (Debezium's rule), so the start says that, without a warning, whoever
// wrote the position.
func TestCompareSaysWhatHappens(t *testing.T) {
	for _, by := range []string{"outboxrelay", "Debezium"} {
		var buf bytes.Buffer
		s := &Source{cfg: &Config{Slot: "s"}, opt: SourceOptions{Log: slog.New(slog.NewTextHandler(&buf, nil))}}
		st := &stream{srv: &Server{Slot: Slot{ConfirmedFlush: 100}}}
		s.compare(st, capture.Known{Recorded: 200, RecordedBy: by})
		if out := buf.String(); !strings.Contains(out, "is skipped") || !strings.Contains(out, "by="+by) || strings.Contains(out, "sent again") || strings.Contains(out, "WARN") {
			t.Errorf("recorded by %s: logged %q, want it to say the covered events are skipped, by whom, and no warning", by, out)
		}
	}
}
