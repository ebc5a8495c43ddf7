package relay_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/registry"
	"github.com/outboxrelay/outboxrelay/registry/registrytest"
	"github.com/outboxrelay/outboxrelay/relay"
	"github.com/outboxrelay/outboxrelay/router"
)

// valueSink copies each record's value (as the real sinks copy in Send)
// and acknowledges at once.
type valueSink struct {
	mu     sync.Mutex
	values map[string][]byte // by event id
	topic  string
}

func (s *valueSink) Send(_ context.Context, r *router.Record, ack func(error)) error {
	s.mu.Lock()
	s.values[r.EventID] = bytes.Clone(r.Value)
	s.topic = r.Topic
	s.mu.Unlock()
	go ack(nil)
	return nil
}

func (s *valueSink) Flush(context.Context) error { return nil }

func (s *valueSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.values)
}

// TestRegistryOutageHoldsTheSlot: the schema registry answers 503 for the
// first 10 s while rows keep arriving. Meanwhile nothing is sent and the slot's
// confirmed_flush_lsn does not move; once it answers, every row reaches
// the sink in the wire format, its id the one registered (once).
func TestRegistryOutageHoldsTheSlot(t *testing.T) {
	f := newStreamFixture(t, nil)
	reg := srfake.New()
	defer reg.Close()
	var down atomic.Bool
	var registrations atomic.Int64
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		if r.Method == http.MethodPost {
			registrations.Add(1)
		}
		return false
	})
	rcfg, _, err := router.ParseConfig(map[string]string{"transforms": "outbox", "transforms.outbox.type": router.EventRouterClass,
		"transforms.outbox.table.expand.json.payload": "true", "topic.prefix": f.name, "value.converter": router.AvroConverterClass})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := router.New(rcfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	conv, err := registry.NewConverter(registry.Config{Value: registry.Side{Class: router.AvroConverterClass, URLs: []string{reg.URL()}, AutoRegister: true}},
		registrytest.Formats(router.AvroConverterClass))
	if err != nil {
		t.Fatal(err)
	}
	sink := &valueSink{values: map[string][]byte{}}
	// The registry is down from the start: a schema id, once known, is
	// cached, and the outage is felt only by a schema not seen yet.
	down.Store(true)
	f.rt = rt
	stop := f.runWith(t, sinkOnly{sink}, func(o *relay.Options) { o.Convert = conv })

	// Load: 20 rows every 100 ms from another connection, for 14 s.
	inserter := testbed.Admin(t)
	var inserted atomic.Int64
	loadDone := make(chan error, 1)
	go func() {
		for i := 0; i < 140; i++ {
			_, err := inserter.Exec(context.Background(), fmt.Sprintf(`INSERT INTO %s.outbox (aggregatetype, aggregateid, payload) SELECT 'a', 'k', jsonb_build_object('i', g) FROM generate_series(1, 20) g`, f.name))
			if err != nil {
				loadDone <- err
				return
			}
			inserted.Add(20)
			time.Sleep(100 * time.Millisecond)
		}
		loadDone <- nil
	}()
	time.Sleep(time.Second) // the relay is now retrying the first row's schema
	held, sent := testbed.ConfirmedFlush(t, f.admin, f.name), sink.count()
	for end := time.Now().Add(9 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if got := testbed.ConfirmedFlush(t, f.admin, f.name); got != held {
			t.Fatalf("confirmed_flush_lsn moved during the registry outage: %X → %X", held, got)
		}
	}
	if n := sink.count(); n != 0 || sent != 0 {
		t.Errorf("%d records sent during the outage", n)
	}
	t.Logf("outage of 10 s: %d rows inserted before its end, %d sent during it, confirmed_flush_lsn held at %X", inserted.Load(), sent, held)
	down.Store(false)
	if err := <-loadDone; err != nil {
		t.Fatal(err)
	}
	total := int(inserted.Load())
	waitFor(t, "every row sent", 60*time.Second, func() bool { return sink.count() == total })
	last := f.walInsertLSN(t)
	waitFor(t, "the slot to confirm past the last commit", 20*time.Second, func() bool { return testbed.ConfirmedFlush(t, f.admin, f.name) >= last })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	ss, ok := reg.GetSchema(sink.topic+"-value", 1)
	if !ok {
		t.Fatalf("subject %s-value not registered", sink.topic)
	}
	if n := registrations.Load(); n != 1 {
		t.Errorf("%d registrations answered, want 1 (one schema)", n)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	for id, v := range sink.values {
		if len(v) < 5 || v[0] != 0 || int(binary.BigEndian.Uint32(v[1:5])) != ss.ID || !bytes.HasPrefix(v[5:], []byte(`{"i":`)) {
			t.Fatalf("event %s: value % x is not the wire format with id %d and the payload", id, v, ss.ID)
		}
	}
	t.Logf("%d rows, 0 missing, every value 0x00 + id %d + payload", total, ss.ID)
}
