package deploytest

import (
	"slices"
	"testing"
)

// TestSeriesNames: the live test checks each series name of the alerts and
// the dashboard against what the relay exports; labels, functions,
// keywords and durations are not names.
func TestSeriesNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`up{job="outboxrelay"} == 0`, []string{"up"}},
		{`(sum by (job) (outboxrelay_ready{job="outboxrelay"}) or on () vector(0)) == 0`, []string{"outboxrelay_ready"}},
		{`(outboxrelay_ready{job="x"} == 0) unless on (job, instance) (outboxrelay_state{state="standby"} == 1)`, []string{"outboxrelay_ready", "outboxrelay_state"}},
		{`changes(outboxrelay_confirmed_lsn[15m]) == 0 and (outboxrelay_confirmed_lsn offset 15m)`, []string{"outboxrelay_confirmed_lsn", "outboxrelay_confirmed_lsn"}},
		{`histogram_quantile(0.99, sum by (le) (rate(outboxrelay_commit_to_ack_seconds_bucket{instance=~".+"}[1m])))`, []string{"outboxrelay_commit_to_ack_seconds_bucket"}},
		{`sum by (kind, retrying) (rate(outboxrelay_kafka_produce_errors_total{kind="a \"b\" {c}"}[5m])) > 1e3`, []string{"outboxrelay_kafka_produce_errors_total"}},
		{`relay_ready > bool 1`, []string{"relay_ready"}},
		{`max without (instance) (go_goroutines) / ignoring (x) group_left (y) process_open_fds`, []string{"go_goroutines", "process_open_fds"}},
	} {
		if got := seriesNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("seriesNames(%s) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}
