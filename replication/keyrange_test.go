package replication

import (
	"strings"
	"testing"
)

// Regression (issue 27, item 4): milliseconds were multiplied into a
// time.Duration unchecked: outbox.retention.ms=18446744073710 became
// 448 µs, 9223372036854775807 became -1 ms, and heartbeat.interval.ms
// beyond a Duration was refused as "must be 0 (off) or positive" although
// it was positive. Each key is now read within its declared range, and
// the error names the key, the value and the range.
func TestMillisecondKeysDoNotWrap(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		err        string // "" for none
	}{
		{"heartbeat.interval.ms", "9223372036854775807", `heartbeat.interval.ms "9223372036854775807": is out of range; write a number of milliseconds from 0 to 2147483647`},
		{"heartbeat.interval.ms", "2147483647", ""},
		{"slot.retry.delay.ms", "9223372036854775807", `slot.retry.delay.ms "9223372036854775807": is out of range; write a number of milliseconds from 0 to 9223372036854`},
		{"status.update.interval.ms", "0", `status.update.interval.ms "0": is out of range; write a number of milliseconds from 1 to 2147483647`},
		{"retriable.restart.connector.wait.ms", "18446744073710", `retriable.restart.connector.wait.ms "18446744073710": is out of range`},
		{"errors.max.retries", "9223372036854775807", `errors.max.retries "9223372036854775807": is out of range; write an integer from -1 to 2147483647`},
	} {
		m := baseConfig()
		m[tc.key] = tc.value
		_, err := ParseConfig(m)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s=%s: %v", tc.key, tc.value, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s=%s: err %v, want it to contain %q", tc.key, tc.value, err, tc.err)
		case err != nil && strings.Contains(err.Error(), "must be 0 (off) or positive"):
			t.Errorf("%s=%s: refused for the wrong reason: %v", tc.key, tc.value, err)
		}
	}
}
