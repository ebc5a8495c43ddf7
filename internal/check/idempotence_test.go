package check

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/outboxrelay/outboxrelay/sink"
)

// TestIdempotenceCheck: check reports the idempotent producer; when the
// brokers refuse InitProducerId it fails naming the ACL and the key.
//
// Regression (review of issue 17a, finding 3): every InitProducerId error,
// a broker still starting included, was reported as a missing ACL, after a
// single attempt, with the ACL hint twice. Now answers the relay retries
// are asked again and reported as what they are, and only an
// authorization refusal names the ACL, once.
func TestIdempotenceCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		disable bool
		fault   *kerr.Error
		count   int
		ok      bool
		want    []string
		notWant []string
	}{
		{name: "granted", ok: true, want: []string{"enable.idempotence=true", "producer id"}},
		{name: "disabled", disable: true, ok: true, want: []string{"enable.idempotence=false", "twice"}},
		{name: "refused", fault: kerr.ClusterAuthorizationFailed, count: -1, want: []string{"CLUSTER_AUTHORIZATION_FAILED", "IdempotentWrite", "enable.idempotence=false"}},
		{name: "loading-then-granted", fault: kerr.CoordinatorLoadInProgress, count: 2, ok: true, want: []string{"enable.idempotence=true", "producer id"}},
		{name: "loading", fault: kerr.CoordinatorLoadInProgress, count: -1, want: []string{"after 3 attempts", "[14]", "run check again"}, notWant: []string{"IdempotentWrite"}},
		{name: "not-available", fault: kerr.CoordinatorNotAvailable, count: -1, want: []string{"after 3 attempts", "[15]"}, notWant: []string{"IdempotentWrite"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
			if err != nil {
				t.Fatal(err)
			}
			defer cluster.Close()
			if tc.fault != nil {
				cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.InitProducerID}, Err: tc.fault, Count: tc.count})
			}
			cfg := sink.Config{Brokers: cluster.ListenAddrs(), RequestTimeout: 5 * time.Second, DisableIdempotence: tc.disable}
			p, err := sink.NewProducer(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			c := &checker{kafka: cfg, prod: p}
			c.idempotence(context.Background())
			if len(c.results) != 1 || c.results[0].OK != tc.ok {
				t.Fatalf("results %+v, want one with OK %v", c.results, tc.ok)
			}
			text := c.results[0].Detail + " " + c.results[0].Fix
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("%q does not name %s", text, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(text, w) {
					t.Errorf("%q names %s", text, w)
				}
			}
			if n := strings.Count(text, "IdempotentWrite"); n > 1 {
				t.Errorf("%q gives the ACL hint %d times", text, n)
			}
		})
	}
}
