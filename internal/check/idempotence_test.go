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
func TestIdempotenceCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		disable bool
		refuse  bool
		ok      bool
		want    []string
	}{
		{name: "granted", ok: true, want: []string{"enable.idempotence=true", "producer id"}},
		{name: "disabled", disable: true, ok: true, want: []string{"enable.idempotence=false", "twice"}},
		{name: "refused", refuse: true, want: []string{"Cluster Authorization Failed", "IdempotentWrite", "enable.idempotence=false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
			if err != nil {
				t.Fatal(err)
			}
			defer cluster.Close()
			if tc.refuse {
				cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.InitProducerID}, Err: kerr.ClusterAuthorizationFailed, Count: -1})
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
		})
	}
}
