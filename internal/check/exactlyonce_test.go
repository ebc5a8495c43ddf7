package check

import (
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/sink/exactlyonce"
)

// Regression (review of issue 17, finding 12): the check did not compare
// transaction.timeout.ms with the brokers' transaction.max.timeout.ms, the
// one InitProducerId failure a check can predict.
func TestTimeoutTooLong(t *testing.T) {
	for _, tc := range []struct {
		timeout time.Duration
		max     string
		want    bool
	}{
		{60 * time.Second, "900000", false},
		{900 * time.Second, "900000", false},
		{901 * time.Second, "900000", true},
		{60 * time.Second, "", false},
	} {
		if got := timeoutTooLong(exactlyonce.Config{Timeout: tc.timeout}, tc.max); got != tc.want {
			t.Errorf("timeout %s, max %q: %v, want %v", tc.timeout, tc.max, got, tc.want)
		}
	}
}
