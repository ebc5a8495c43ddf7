package setup

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/registry"
	"github.com/outboxrelay/outboxrelay/registry/registrytest"
	"github.com/outboxrelay/outboxrelay/router"
	"github.com/outboxrelay/outboxrelay/sink"
)

// The converter reuses its buffer at every call and the producer holds
// records until Kafka answers: the records reach Kafka in the wire format,
// each with its own body (the delivery copies in Send), keys too.
func TestConvertedRecordsReachKafka(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	formats := registrytest.Formats(router.AvroConverterClass)
	side := func(isKey bool) registry.Side {
		return registry.Side{Class: router.AvroConverterClass, IsKey: isKey, URLs: []string{reg.URL()}, AutoRegister: true}
	}
	conv, err := registry.NewConverter(registry.Config{Key: side(true), Value: side(false)}, formats)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := sink.ParseConfig(map[string]string{"bootstrap.servers": testbed.KafkaBrokers(t),
		"topic.creation.default.partitions": "3", "topic.creation.default.replication.factor": "1"})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := sink.NewProducer(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	d := sink.NewAtLeastOnce(p, nil)
	topic := fmt.Sprintf("registry_wire_%d", time.Now().UnixNano())
	const n = 2000
	ctx := context.Background()
	for i := range n {
		rec := &router.Record{Topic: topic, Partition: -1, EventID: strconv.Itoa(i),
			Key:   []byte(fmt.Sprintf(`{"schema":{"type":"string","optional":false},"payload":"k%d"}`, i%7)),
			Value: []byte(fmt.Sprintf(`{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"i"}],"optional":false},"payload":{"i":%d}}`, i))}
		if err := conv.Convert(ctx, rec); err != nil {
			t.Fatal(err)
		}
		if err := d.Send(ctx, rec, func(err error) {
			if err != nil {
				t.Errorf("record %d: %v", i, err)
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	keySchema, _ := reg.GetSchema(topic+"-key", 1)
	valueSchema, _ := reg.GetSchema(topic+"-value", 1)
	msgs := testbed.Consume(t, topic, nil, n, 30*time.Second, 500*time.Millisecond)
	if len(msgs) != n {
		t.Fatalf("%d records in Kafka, want %d", len(msgs), n)
	}
	seen := map[string]bool{}
	for _, m := range msgs {
		kid, kbody := wireParts(t, m.Key)
		vid, vbody := wireParts(t, m.Value)
		var i, k int
		if _, err := fmt.Sscanf(string(vbody), `{"i":%d}`, &i); err != nil || kid != keySchema.ID || vid != valueSchema.ID {
			t.Fatalf("record at offset %d: key id %d (%d), value id %d (%d), body %q", m.Offset, kid, keySchema.ID, vid, valueSchema.ID, vbody)
		}
		if _, err := fmt.Sscanf(string(kbody), `"k%d"`, &k); err != nil || k != i%7 {
			t.Fatalf("record %d: key body %q, want \"k%d\"", i, kbody, i%7)
		}
		seen[string(vbody)] = true
	}
	if len(seen) != n {
		t.Errorf("%d distinct bodies in %d records: a reused buffer reached Kafka", len(seen), n)
	}
}

func wireParts(t *testing.T, b []byte) (int, []byte) {
	t.Helper()
	if len(b) < 5 || b[0] != 0 {
		t.Fatalf("not the wire format: % x", b)
	}
	return int(binary.BigEndian.Uint32(b[1:5])), bytes.Clone(b[5:])
}
