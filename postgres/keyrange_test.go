package postgres

import (
	"strings"
	"testing"
	"time"
)

// Regression (issue 27, item 4): outbox.retention.ms was multiplied into a
// time.Duration unchecked: 18446744073710 became 448 µs (the janitor would
// delete every confirmed row at once) and 9223372036854775807 became
// -1 ms (the janitor silently off). It is now read within its declared
// range, and the error names the key, the value and the range.
func TestRetentionDoesNotWrap(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  time.Duration
		err   string
	}{
		{"604800000", 7 * 24 * time.Hour, ""},
		{"18446744073710", 0, `outbox.retention.ms "18446744073710": is out of range; write a number of milliseconds from 0 to 9223372036854`},
		{"9223372036854775807", 0, `outbox.retention.ms "9223372036854775807": is out of range`},
	} {
		c, err := ParseJanitorConfig(map[string]string{KeyRetention: tc.value})
		switch {
		case tc.err == "" && (err != nil || c.Retention != tc.want):
			t.Errorf("outbox.retention.ms=%s: %v, %v; want %v", tc.value, c.Retention, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("outbox.retention.ms=%s: err %v (retention %v), want it to contain %q", tc.value, err, c.Retention, tc.err)
		}
	}
}
