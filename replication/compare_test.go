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
func TestCompareSaysWhatHappens(t *testing.T) {
	for _, tc := range []struct {
		skips bool
		want  string
	}{
		{false, "sent again"},
		{true, "are skipped"},
	} {
		var buf bytes.Buffer
		s := &Source{cfg: &Config{Slot: "s"}, opt: SourceOptions{Log: slog.New(slog.NewTextHandler(&buf, nil))}}
		st := &stream{srv: &Server{Slot: Slot{ConfirmedFlush: 100}}}
		s.compare(st, capture.Known{Recorded: 200, Skips: tc.skips})
		if out := buf.String(); !strings.Contains(out, tc.want) || tc.skips && (strings.Contains(out, "sent again") || strings.Contains(out, "WARN")) {
			t.Errorf("skips=%v: logged %q, want it to say %q (and no warning under exactly-once)", tc.skips, out, tc.want)
		}
	}
}
