package setup

import (
	"strings"
	"testing"
	"time"
)

// Regression (review of issue 17, finding 5): an interval of
// transaction.boundary=interval at or above half of
// transaction.timeout.ms was accepted; an idle open transaction then
// outlived the timeout, the coordinator aborted it and the relay stopped
// as fenced. It is refused, naming both keys.
func TestParseExactlyOnce(t *testing.T) {
	o := OffsetsConfig{Connector: "c", Every: time.Second}
	for _, tc := range []struct {
		relay map[string]string
		err   string // "" for none
	}{
		{map[string]string{"exactly.once.support": "required"}, ""},
		{map[string]string{"exactly.once.support": "required", "transaction.boundary": "interval", "transaction.boundary.interval.ms": "29999"}, ""},
		{map[string]string{"exactly.once.support": "required", "transaction.boundary": "interval", "transaction.boundary.interval.ms": "30000"},
			"transaction.boundary.interval.ms 30000 must be under half of transaction.timeout.ms 60000"},
		{map[string]string{"exactly.once.support": "required", "transaction.boundary": "interval", "transaction.boundary.interval.ms": "120000", "transaction.timeout.ms": "300000"}, ""},
		{map[string]string{"exactly.once.support": "required", "transaction.timeout.ms": "x"}, "transaction.timeout.ms \"x\""},
	} {
		c, err := parseExactlyOnce(tc.relay, o, false)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%v: %v", tc.relay, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%v: error %v, want one with %q", tc.relay, err, tc.err)
		case tc.err == "" && !c.Required:
			t.Errorf("%v: not required", tc.relay)
		}
	}
}
