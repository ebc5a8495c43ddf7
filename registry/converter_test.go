package registry

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/outboxrelay/outboxrelay/internal/connectschema"
	"github.com/outboxrelay/outboxrelay/internal/terminal"
	"github.com/outboxrelay/outboxrelay/registry/avro"
	"github.com/outboxrelay/outboxrelay/relay"
	"github.com/outboxrelay/outboxrelay/router"
)

// testCodec is a test-only format: the registered schema is
// {"test":<the Connect schema's type>,"name":…}; the body is the payload
// JSON itself, so that a test reads it back without a real decoder.
type testCodec struct {
	name, typ string
}

func (c *testCodec) Schema() string {
	return fmt.Sprintf(`{"test":%q,"name":%q}`, c.typ, c.name)
}
func (c *testCodec) Name() string { return c.name }
func (c *testCodec) Append(dst, payload []byte) ([]byte, error) {
	if bytes.HasPrefix(payload, []byte(`"bad`)) {
		return dst, errors.New("the test codec refuses payloads starting with bad")
	}
	return append(dst, payload...), nil
}

var compiles atomic.Int64

var testFormat = Format{SchemaType: "JSON", Compile: func(s *connectschema.Schema) (Codec, error) {
	compiles.Add(1)
	if s.Name == "refused" {
		return nil, errors.New("the test codec cannot compile schemas named refused")
	}
	name := s.Name
	if name == "" {
		name = string(s.Type)
	}
	return &testCodec{name: name, typ: string(s.Type)}, nil
}}

const testClass = "io.confluent.connect.json.JsonSchemaConverter"

var testFormats = map[string]Format{testClass: testFormat}

func testSide(url string, isKey bool) Side {
	return Side{Class: testClass, IsKey: isKey, URLs: []string{url}, AutoRegister: true, LatestStrict: true, LatestTTL: -1}
}

func newConverter(t *testing.T, cfg Config) *Converter {
	t.Helper()
	c, err := NewConverter(cfg, testFormats)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// envelope is what the router writes for JsonConverter schemas.enable=true.
func envelope(schema, payload string) []byte {
	return []byte(`{"schema":` + schema + `,"payload":` + payload + `}`)
}

const stringSchema = `{"type":"string","optional":false}`
const orderSchema = `{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"}],"optional":false,"name":"Order"}`

func record(topic, id string, key, value []byte) *router.Record {
	return &router.Record{Topic: topic, Partition: -1, Key: key, Value: value, EventID: id}
}

// wire splits a Confluent wire-format record: magic byte, schema id, body.
func wire(t *testing.T, b []byte) (int, []byte) {
	t.Helper()
	if len(b) < 5 || b[0] != 0 {
		t.Fatalf("not the wire format: % x", b)
	}
	return int(binary.BigEndian.Uint32(b[1:5])), b[5:]
}

// registeredID is the id srfake holds for subject's version 1.
func registeredID(t *testing.T, reg *srfake.Registry, subject string) (int, string) {
	t.Helper()
	ss, ok := reg.GetSchema(subject, 1)
	if !ok {
		t.Fatalf("subject %s not registered", subject)
	}
	return ss.ID, ss.Schema.Schema
}

func TestConvertWritesTheWireFormat(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	c := newConverter(t, Config{Key: testSide(reg.URL(), true), Value: testSide(reg.URL(), false)})
	rec := record("outbox.event.order", "e1", envelope(stringSchema, `"k1"`), envelope(orderSchema, `{"id":7}`))
	if err := c.Convert(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	kid, kbody := wire(t, rec.Key)
	vid, vbody := wire(t, rec.Value)
	if want, schema := registeredID(t, reg, "outbox.event.order-key"); kid != want || schema != `{"test":"string","name":"string"}` {
		t.Errorf("key id %d schema %s, registry has %d", kid, schema, want)
	}
	if want, _ := registeredID(t, reg, "outbox.event.order-value"); vid != want {
		t.Errorf("value id %d, registry has %d", vid, want)
	}
	if string(kbody) != `"k1"` || string(vbody) != `{"id":7}` {
		t.Errorf("bodies %s / %s", kbody, vbody)
	}
}

func TestNullPayloadAndNullKey(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	c := newConverter(t, Config{Key: testSide(reg.URL(), true), Value: testSide(reg.URL(), false)})
	rec := record("t", "e1", nil, envelope(`{"type":"string","optional":true}`, `null`))
	if err := c.Convert(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if rec.Key != nil || rec.Value != nil {
		t.Errorf("key %q value %q, want both null (Confluent writes null for a null object)", rec.Key, rec.Value)
	}
}

// countRegistrations counts POST /subjects/{s}/versions per subject and
// schema ("subject schema").
func countRegistrations(reg *srfake.Registry) *sync32 {
	n := &sync32{m: map[string]int{}}
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/versions") {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var req schemaRequest
			_ = json.Unmarshal(body, &req)
			n.add(strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/subjects/"), "/versions") + " " + req.Schema)
		}
		return false
	})
	return n
}

type sync32 struct {
	mu sync.Mutex
	m  map[string]int
}

func (s *sync32) add(k string) {
	s.mu.Lock()
	s.m[k]++
	s.mu.Unlock()
}

func TestEachSchemaRegisteredOnce(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	n := countRegistrations(reg)
	c := newConverter(t, Config{Value: testSide(reg.URL(), false)})
	before := compiles.Load()
	schemas := []string{orderSchema, `{"type":"string","optional":false}`}
	topics := []string{"a", "b", "c"}
	for i := range 3000 {
		payload := fmt.Sprintf(`{"id":%d}`, i)
		if i%2 == 1 {
			payload = fmt.Sprintf(`"s%d"`, i)
		}
		rec := record(topics[i%3], fmt.Sprint(i), []byte("k"), envelope(schemas[i%2], payload))
		if err := c.Convert(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		if _, body := wire(t, rec.Value); string(body) != payload {
			t.Fatalf("record %d body %s, want %s", i, body, payload)
		}
	}
	if len(n.m) != 6 {
		t.Errorf("registrations: %v, want the 6 of 3 topics (subjects) × 2 schemas", n.m)
	}
	for s, k := range n.m {
		if k != 1 {
			t.Errorf("subject and schema %s: %d registrations, want 1", s, k)
		}
	}
	if got := compiles.Load() - before; got != 2 {
		t.Errorf("%d compilations for 2 distinct schemas", got)
	}
}

func TestSubjectNameStrategies(t *testing.T) {
	for _, tt := range []struct {
		s           Strategy
		isKey       bool
		topic, name string
		want        string
	}{
		{TopicName, false, "orders", "Order", "orders-value"},
		{TopicName, true, "orders", "Order", "orders-key"},
		{RecordName, false, "orders", "io.x.Order", "io.x.Order"},
		{TopicRecordName, true, "orders", "io.x.Order", "orders-io.x.Order"},
	} {
		if got := tt.s.Subject(tt.topic, tt.isKey, tt.name); got != tt.want {
			t.Errorf("%v(%s, key=%v, %s) = %s, want %s", tt.s, tt.topic, tt.isKey, tt.name, got, tt.want)
		}
	}
	reg := srfake.New()
	defer reg.Close()
	s := testSide(reg.URL(), false)
	s.Strategy = TopicRecordName
	c := newConverter(t, Config{Value: s})
	if err := c.Convert(context.Background(), record("orders", "e1", nil, envelope(orderSchema, `{"id":1}`))); err != nil {
		t.Fatal(err)
	}
	if !reg.SubjectExists("orders-Order") {
		t.Error("TopicRecordNameStrategy: subject orders-Order not registered")
	}
}

// Schema ids are kept by topic (the subject's name is built only on a
// miss): with TopicNameStrategy and TopicRecordNameStrategy one schema on
// two topics is registered under each topic's subject, once each for three
// records, and a payload that does not fit, once the id is known, is
// poison naming its own topic's subject. (srfake, as Confluent's registry,
// gives one schema one id in every subject: the ids cannot tell.)
func TestOneSchemaTwoTopics(t *testing.T) {
	for _, tt := range []struct {
		strategy Strategy
		suffix   string
	}{{TopicName, "-value"}, {TopicRecordName, "-Order"}} {
		reg := srfake.New()
		defer reg.Close()
		n := countRegistrations(reg)
		s := testSide(reg.URL(), false)
		s.Strategy = tt.strategy
		c := newConverter(t, Config{Value: s})
		for _, topic := range []string{"orders", "payments", "orders"} {
			rec := record(topic, "e1", nil, envelope(orderSchema, `{"id":1}`))
			if err := c.Convert(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
			id, _ := wire(t, rec.Value)
			if want, _ := registeredID(t, reg, topic+tt.suffix); id != want {
				t.Errorf("%v %s: schema id %d, want %d (%s%s's)", tt.strategy, topic, id, want, topic, tt.suffix)
			}
		}
		if len(n.m) != 2 || n.m["orders"+tt.suffix+` {"test":"struct","name":"Order"}`] != 1 || n.m["payments"+tt.suffix+` {"test":"struct","name":"Order"}`] != 1 {
			t.Errorf("%v: registrations %v, want one under each topic's subject", tt.strategy, n.m)
		}
		err := c.Convert(context.Background(), record("payments", "e2", nil, envelope(orderSchema, `"bad one"`)))
		if err == nil || !strings.Contains(err.Error(), "payments"+tt.suffix) {
			t.Errorf("%v: a payload that does not fit: %v; want a poison error naming subject payments%s", tt.strategy, err, tt.suffix)
		}
	}
}

// Regression (review of the ids kept by topic): with RecordNameStrategy
// the subject is the schema's name whatever the topic, but the ids were
// kept per topic: one schema on four topics was registered four times,
// and with use.latest.version and latest.cache.ttl.sec=-1 a known schema
// on a new topic asked the registry again and became poison once the
// subject had a newer version. Confluent's caches are by subject.
func TestRecordNameOneSubjectAcrossTopics(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	n := countRegistrations(reg)
	s := testSide(reg.URL(), false)
	s.Strategy = RecordName
	c := newConverter(t, Config{Value: s})
	for _, topic := range []string{"a", "b", "c", "d"} {
		if err := c.Convert(context.Background(), record(topic, "e1", nil, envelope(orderSchema, `{"id":1}`))); err != nil {
			t.Fatal(err)
		}
	}
	if len(n.m) != 1 || n.m[`Order {"test":"struct","name":"Order"}`] != 1 {
		t.Errorf("one schema, one subject (Order), four topics: registrations %v, want 1", n.m)
	}

	latest := testSide(reg.URL(), false)
	latest.Strategy = RecordName
	latest.AutoRegister, latest.UseLatest, latest.LatestTTL = false, true, -1
	c = newConverter(t, Config{Value: latest})
	rec := record("orders", "e2", nil, envelope(orderSchema, `{"id":1}`))
	if err := c.Convert(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	id, _ := wire(t, rec.Value)
	if _, _, err := reg.RegisterSchema("Order", sr.Schema{Schema: `{"test":"struct","name":"Newer"}`, Type: sr.TypeJSON}); err != nil {
		t.Fatal(err)
	}
	rec = record("payments", "e3", nil, envelope(orderSchema, `{"id":1}`))
	if err := c.Convert(context.Background(), rec); err != nil {
		t.Fatalf("subject Order's latest version kept for the process's life, a new topic: %v", err)
	}
	if got, _ := wire(t, rec.Value); got != id {
		t.Errorf("a new topic: schema id %d, want the subject's known %d", got, id)
	}
}

// answer makes reg answer every registry request with status and body.
func answer(reg *srfake.Registry, status int, code int, msg string) {
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error_code":%d,"message":%q}`, code, msg)
		return true
	})
}

func TestRegistryRefusalsArePoison(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status int
		code   int
		msg    string
	}{
		{"incompatible", http.StatusConflict, 409, "Schema being registered is incompatible with an earlier schema for subject \"orders-value\""},
		{"invalid", http.StatusUnprocessableEntity, 42201, "Invalid schema"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := srfake.New()
			defer reg.Close()
			answer(reg, tt.status, tt.code, tt.msg)
			c := newConverter(t, Config{Value: testSide(reg.URL(), false)})
			orig := envelope(orderSchema, `{"id":1}`)
			rec := record("orders", "ev-42", []byte("k"), orig)
			err := c.Convert(context.Background(), rec)
			var ce *relay.ConvertError
			if !errors.As(err, &ce) || ce.Stage != "VALUE_CONVERTER" {
				t.Fatalf("err = %v, want a VALUE_CONVERTER *relay.ConvertError", err)
			}
			for _, want := range []string{`subject "orders-value"`, "event ev-42", tt.msg, fmt.Sprintf("HTTP %d", tt.status)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
			if !bytes.Equal(rec.Value, orig) || string(rec.Key) != "k" {
				t.Errorf("a failed Convert changed the record: %q / %q", rec.Key, rec.Value)
			}
		})
	}
}

func TestRegistryUnavailableIsRetryable(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	var fail atomic.Bool
	fail.Store(true)
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if !fail.Load() {
			return false
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	})
	c := newConverter(t, Config{Value: testSide(reg.URL(), false)})
	rec := record("orders", "e1", nil, envelope(orderSchema, `{"id":1}`))
	err := c.Convert(context.Background(), rec)
	if !errors.Is(err, relay.ErrConverterUnavailable) || !strings.Contains(err.Error(), "HTTP 503") {
		t.Fatalf("err = %v, want ErrConverterUnavailable naming HTTP 503", err)
	}
	fail.Store(false)
	if err := c.Convert(context.Background(), rec); err != nil {
		t.Fatalf("after the outage: %v", err)
	}
	wire(t, rec.Value)

	// Nothing listening: connection refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	c = newConverter(t, Config{Value: testSide(dead, false)})
	err = c.Convert(context.Background(), record("orders", "e1", nil, envelope(orderSchema, `{"id":1}`)))
	var ne *NetError
	if !errors.Is(err, relay.ErrConverterUnavailable) || !errors.As(err, &ne) {
		t.Fatalf("connection refused: err = %v, want ErrConverterUnavailable", err)
	}
}

func TestSeveralURLsTriedInTurn(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	defer failing.Close()
	s := testSide(dead, false)
	s.URLs = append(s.URLs, failing.URL, reg.URL())
	c := newConverter(t, Config{Value: s})
	rec := record("orders", "e1", nil, envelope(orderSchema, `{"id":1}`))
	if err := c.Convert(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if id, _ := wire(t, rec.Value); !reg.SubjectExists("orders-value") || id == 0 {
		t.Errorf("id %d; subject registered: %v", id, reg.SubjectExists("orders-value"))
	}
}

func TestAuth(t *testing.T) {
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:s3cret"))
	for _, tt := range []struct {
		name     string
		expect   string
		mod      func(*Side, string)
		wantFail string // "" for success
	}{
		{"user info", basic, func(s *Side, _ string) { s.User, s.Password = "alice", "s3cret" }, ""},
		{"bearer", "Bearer tok", func(s *Side, _ string) { s.BearerToken = "tok" }, ""},
		{"wrong password", basic, func(s *Side, _ string) { s.User, s.Password = "alice", "nope" }, "HTTP 403"},
		{"none", basic, func(*Side, string) {}, "HTTP 401"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := srfake.New(srfake.WithAuth(tt.expect))
			defer reg.Close()
			s := testSide(reg.URL(), false)
			tt.mod(&s, reg.URL())
			c := newConverter(t, Config{Value: s})
			err := c.Convert(context.Background(), record("orders", "e1", nil, envelope(orderSchema, `{"id":1}`)))
			if tt.wantFail == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !terminal.IsFinal(err) || !strings.Contains(err.Error(), tt.wantFail) || !strings.Contains(err.Error(), "value.converter.basic.auth.credentials.source") {
				t.Fatalf("err = %v, want a final error with %s naming the credentials keys", err, tt.wantFail)
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "nope") {
				t.Errorf("the error holds the password: %v", err)
			}
		})
	}
}

func TestLookupWithoutAutoRegister(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	s := testSide(reg.URL(), false)
	s.AutoRegister = false
	c := newConverter(t, Config{Value: s})
	rec := record("orders", "e9", nil, envelope(orderSchema, `{"id":1}`))
	err := c.Convert(context.Background(), rec)
	var ce *relay.ConvertError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "HTTP 404") || reg.SubjectExists("orders-value") {
		t.Fatalf("unregistered schema: err = %v (subject created: %v), want a poison error with the 404", err, reg.SubjectExists("orders-value"))
	}
	id, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: `{"test":"struct","name":"Order"}`, Type: sr.TypeJSON})
	if err != nil {
		t.Fatal(err)
	}
	c = newConverter(t, Config{Value: s})
	if err := c.Convert(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if got, _ := wire(t, rec.Value); got != id {
		t.Errorf("id %d, want the registered %d", got, id)
	}
}

func TestUseLatestVersion(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	own := `{"test":"struct","name":"Order"}`
	if _, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: `{"test":"struct","name":"Older"}`, Type: sr.TypeJSON}); err != nil {
		t.Fatal(err)
	}
	id, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: own, Type: sr.TypeJSON})
	if err != nil {
		t.Fatal(err)
	}
	s := testSide(reg.URL(), false)
	s.AutoRegister, s.UseLatest = false, true
	c := newConverter(t, Config{Value: s})
	rec := record("orders", "e1", nil, envelope(orderSchema, `{"id":1}`))
	if err := c.Convert(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if got, _ := wire(t, rec.Value); got != id {
		t.Errorf("id %d, want the latest %d", got, id)
	}
	// A newer latest version that is not the record's schema.
	if _, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: `{"test":"struct","name":"Newer"}`, Type: sr.TypeJSON}); err != nil {
		t.Fatal(err)
	}
	c = newConverter(t, Config{Value: s})
	err = c.Convert(context.Background(), record("orders", "e2", nil, envelope(orderSchema, `{"id":1}`)))
	var ce *relay.ConvertError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "version 3") {
		t.Fatalf("err = %v, want a poison error naming the latest version 3", err)
	}
}

func TestFormatRefusalsArePoison(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	c := newConverter(t, Config{Key: testSide(reg.URL(), true), Value: testSide(reg.URL(), false)})
	for _, tt := range []struct {
		name       string
		key, value []byte
		stage      string
		want       string
	}{
		{"not an envelope", []byte(`"plain"`), envelope(orderSchema, `{}`), "KEY_CONVERTER", "not {\"schema\""},
		{"schema not compiled", nil, envelope(`{"type":"struct","name":"refused","optional":false}`, `{}`), "VALUE_CONVERTER", "cannot compile"},
		{"payload refused", nil, envelope(stringSchema, `"bad one"`), "VALUE_CONVERTER", "refuses payloads"},
	} {
		rec := record("t", "e7", tt.key, tt.value)
		err := c.Convert(context.Background(), rec)
		var ce *relay.ConvertError
		if !errors.As(err, &ce) || ce.Stage != tt.stage || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "event e7") {
			t.Errorf("%s: err = %v, want a %s poison error with %q", tt.name, err, tt.stage, tt.want)
		}
	}
}

func TestTLS(t *testing.T) {
	reg := srfake.NewRegistry()
	srv := httptest.NewTLSServer(reg.Handler())
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	s := testSide(srv.URL, false)
	c := newConverter(t, Config{Value: s})
	err := c.Convert(context.Background(), record("t", "e1", nil, envelope(orderSchema, `{"id":1}`)))
	if !terminal.IsFinal(err) || !strings.Contains(err.Error(), "truststore.location") {
		t.Fatalf("unknown CA: err = %v, want a final error naming the trust store key", err)
	}
	s.TLSCAFile = ca
	c = newConverter(t, Config{Value: s})
	if err := c.Convert(context.Background(), record("t", "e1", nil, envelope(orderSchema, `{"id":1}`))); err != nil {
		t.Fatal(err)
	}
}

// The converter's output follows the router's memory contract: each
// Convert call's bytes stay valid until the next call.
func TestOutputValidUntilNextConvert(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	c := newConverter(t, Config{Key: testSide(reg.URL(), true), Value: testSide(reg.URL(), false)})
	rec := record("t", "e1", envelope(stringSchema, `"key-one"`), envelope(stringSchema, `"value-one"`))
	if err := c.Convert(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	key := rec.Key
	if _, body := wire(t, key); string(body) != `"key-one"` {
		t.Fatalf("key body %s", body)
	}
	if _, body := wire(t, rec.Value); string(body) != `"value-one"` {
		t.Fatalf("value body %s (the value overwrote the key?)", body)
	}
	if cap(key) != len(key) {
		t.Errorf("the key slice has room to grow into the value: len %d cap %d", len(key), cap(key))
	}
	var js json.RawMessage
	if _, body := wire(t, rec.Value); json.Unmarshal(body, &js) != nil {
		t.Error("value body is not the payload")
	}
}

// A URL that reaches something other than a registry (a 404 page without
// the registry's error code) stops the relay naming the URL key, instead
// of making every record a poison row.
func TestNotARegistryIsFinal(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	c := newConverter(t, Config{Value: testSide(srv.URL, false)})
	err := c.Convert(context.Background(), record("t", "e1", nil, envelope(orderSchema, `{"id":1}`)))
	var ce *relay.ConvertError
	if errors.As(err, &ce) || !terminal.IsFinal(err) || !strings.Contains(err.Error(), "value.converter.schema.registry.url") || !strings.Contains(err.Error(), "HTTP 404") {
		t.Fatalf("err = %v, want a final error naming the URL key", err)
	}
}

// hangingURL returns the URL of a server that accepts TCP connections and
// never answers (a registry stopped with SIGSTOP, or wedged); the test's
// cleanup closes it.
func hangingURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never read or answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + l.Addr().String()
}

// Regression: a registry that accepted the connection and never answered
// held the session for 30 s per URL (requestTimeout), sending PostgreSQL
// no standby status meanwhile. A call is now bounded as a whole, is
// retryable like a 5xx, and the next call starts at the next URL.
func TestHangingRegistryIsBoundedAndRetryable(t *testing.T) {
	hang := hangingURL(t)
	c := newConverter(t, Config{Value: testSide(hang, false)})
	c.value.client.timeout = 300 * time.Millisecond
	start := time.Now()
	err := c.Convert(context.Background(), record("orders", "e1", nil, envelope(orderSchema, `{"id":1}`)))
	took := time.Since(start)
	var ne *NetError
	if !errors.Is(err, relay.ErrConverterUnavailable) || !errors.As(err, &ne) || !strings.Contains(err.Error(), "300ms passed") {
		t.Fatalf("err = %v, want a retryable NetError naming the call's timeout", err)
	}
	if took > 2*time.Second {
		t.Errorf("the call took %s with a timeout of 300ms", took)
	}
	if callTimeout >= 10*time.Second {
		t.Errorf("callTimeout %s is not well below the default status interval (10 s)", callTimeout)
	}

	// A hanging URL, then a good one: the first call spends its time on
	// the hanging URL; the retry starts at the good one, and so do later
	// calls.
	reg := srfake.New()
	defer reg.Close()
	s := testSide(hang, false)
	s.URLs = append(s.URLs, reg.URL())
	c = newConverter(t, Config{Value: s})
	c.value.client.timeout = 300 * time.Millisecond
	rec := record("orders", "e1", nil, envelope(orderSchema, `{"id":1}`))
	if err := c.Convert(context.Background(), rec); !errors.Is(err, relay.ErrConverterUnavailable) {
		t.Fatalf("first call: err = %v, want ErrConverterUnavailable", err)
	}
	start = time.Now()
	if err := c.Convert(context.Background(), rec); err != nil {
		t.Fatalf("retry: %v", err)
	}
	rec = record("orders", "e2", nil, envelope(`{"type":"struct","fields":[],"optional":false,"name":"Other"}`, `{}`))
	if err := c.Convert(context.Background(), rec); err != nil {
		t.Fatalf("a new schema after the retry: %v", err)
	}
	if took := time.Since(start); took > 250*time.Millisecond {
		t.Errorf("the retry and a new schema took %s: they waited for the hanging URL again", took)
	}
}

// Regression: one budget covered every URL of a call, and a URL that ran
// into the call's deadline was blamed even when the URLs before it had
// used the time: with a URL that answers 503 after 4.7 s of the 5 s and a
// healthy one after it, the healthy one got 0.3 s, timed out, was passed
// over, and every call started at the slow URL again and failed for ever.
// A URL cut short so is now tried first, with the whole budget, by the
// retry; the slow URL is not asked again while the healthy one answers.
// The timeouts are scaled: a call's budget is 1 s here.
func TestSlowFailingURLDoesNotStarveTheNext(t *testing.T) {
	const budget = time.Second
	for _, tt := range []struct {
		name          string
		slow, good    time.Duration // when each URL answers: 503, and the id
		firstSucceeds bool          // the first call already succeeds
	}{
		{"503 after 84% of the budget, a fast URL next", 840 * time.Millisecond, 240 * time.Millisecond, false},
		{"503 after 84% of the budget, a URL answering after 60% next", 840 * time.Millisecond, 600 * time.Millisecond, false},
		{"an immediate 503, a fast URL next", 0, 240 * time.Millisecond, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wait := func(r *http.Request, d time.Duration) {
				select {
				case <-time.After(d):
				case <-r.Context().Done():
				}
			}
			var slowAsked atomic.Int32
			slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				slowAsked.Add(1)
				wait(r, tt.slow)
				w.Header().Set("Content-Type", contentType)
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprint(w, `{"error_code":50301,"message":"upstream timed out"}`)
			}))
			defer slow.Close()
			good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				wait(r, tt.good)
				w.Header().Set("Content-Type", contentType)
				fmt.Fprint(w, `{"id":7}`)
			}))
			defer good.Close()
			s := testSide(slow.URL, false)
			s.URLs = append(s.URLs, good.URL)
			c, err := NewClient(s)
			if err != nil {
				t.Fatal(err)
			}
			c.timeout = budget

			ctx := context.Background()
			id, err := c.Register(ctx, "orders-value", "AVRO", `"string"`)
			switch {
			case tt.firstSucceeds && (err != nil || id != 7):
				t.Fatalf("first call: id %d, err %v; want id 7", id, err)
			case !tt.firstSucceeds:
				var ne *NetError
				if !errors.As(err, &ne) || !strings.Contains(err.Error(), "the retry starts at "+good.URL) || !strings.Contains(err.Error(), "50301") {
					t.Errorf("first call: err = %v, want a NetError saying the retry starts at %s and naming the slow URL's 503", err, good.URL)
				}
			}
			if got := c.next.Load(); got != 1 {
				t.Fatalf("after the first call next = %d, want 1 (the healthy URL)", got)
			}
			for n := range 3 {
				start := time.Now()
				if id, err := c.Register(ctx, "orders-value", "AVRO", `"string"`); err != nil || id != 7 {
					t.Fatalf("call %d after the first: id %d, err %v; want id 7", n+2, id, err)
				}
				if took := time.Since(start); took > tt.good+budget/4 {
					t.Errorf("call %d after the first took %s: it asked the slow URL first", n+2, took)
				}
			}
			if got := slowAsked.Load(); got != 1 {
				t.Errorf("the slow URL was asked %d times, want once (the first call only)", got)
			}
		})
	}
}

// Regression: a registry answering a register or lookup with id 0, a
// negative id, one above 2^31-1 or no integer at all was taken at its
// word, and records were written with an id that names no schema. Such an
// answer is an AnswerError naming the URL, the subject and the answer;
// the client tries the next URL; if every URL answers so, the relay stops.
func TestBogusSchemaIDRefused(t *testing.T) {
	for _, tt := range []struct {
		name, id string
		latest   bool
	}{
		{"zero", `0`, false},
		{"negative", `-3`, false},
		{"above int32", `2147483648`, false},
		{"fraction", `1.5`, false},
		{"string", `"7"`, false},
		{"missing", ``, false},
		{"lookup zero", `0`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bogus := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", contentType)
				body := `{"subject":"orders-value","version":1,"schema":"{}"`
				if tt.id != "" {
					body += `,"id":` + tt.id
				}
				fmt.Fprint(w, body+"}")
			}))
			defer bogus.Close()
			s := testSide(bogus.URL, false)
			if tt.latest {
				s.AutoRegister = false
			}
			c := newConverter(t, Config{Value: s})
			orig := envelope(orderSchema, `{"id":1}`)
			rec := record("orders", "e1", nil, orig)
			err := c.Convert(context.Background(), rec)
			var ae *AnswerError
			if !errors.As(err, &ae) || !terminal.IsFinal(err) || errors.Is(err, relay.ErrConverterUnavailable) {
				t.Fatalf("err = %v, want a final AnswerError", err)
			}
			answer := tt.id
			if answer == "" {
				answer = "(none)"
			}
			for _, want := range []string{bogus.URL, `subject "orders-value"`, "schema id " + answer, "value.converter.schema.registry.url"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
			if !bytes.Equal(rec.Value, orig) {
				t.Errorf("the record was rewritten: % x", rec.Value)
			}

			// A good URL after the bogus one is used.
			reg := srfake.New()
			defer reg.Close()
			s.URLs = append(s.URLs, reg.URL())
			if tt.latest {
				s.AutoRegister = true
			}
			c = newConverter(t, Config{Value: s})
			if err := c.Convert(context.Background(), rec); err != nil {
				t.Fatalf("with a good second URL: %v", err)
			}
			if id, _ := wire(t, rec.Value); id < 1 {
				t.Errorf("id %d", id)
			}
		})
	}
}

// Regression: RecordNameStrategy and TopicRecordNameStrategy with a
// schema that has no name (Avro: a string key or payload; JSON Schema: no
// title) posted to the subject "" or "<topic>-". Such a record is poison
// naming the strategy key, the event and the fix, as Confluent's
// RecordNameStrategy.getRecordName refuses it; nothing is registered.
func TestRecordNameStrategyWithoutName(t *testing.T) {
	avroFormat := Format{SchemaType: "AVRO", Compile: func(s *connectschema.Schema) (Codec, error) { return avro.Compile(s) }}
	formats := map[string]Format{router.AvroConverterClass: avroFormat}
	for _, tt := range []struct {
		strategy Strategy
		isKey    bool
		key      string
	}{
		{RecordName, false, "value.converter.value.subject.name.strategy=RecordNameStrategy"},
		{TopicRecordName, false, "value.converter.value.subject.name.strategy=TopicRecordNameStrategy"},
		{RecordName, true, "key.converter.key.subject.name.strategy=RecordNameStrategy"},
		{TopicRecordName, true, "key.converter.key.subject.name.strategy=TopicRecordNameStrategy"},
	} {
		t.Run(tt.key, func(t *testing.T) {
			reg := srfake.New()
			defer reg.Close()
			s := Side{Class: router.AvroConverterClass, IsKey: tt.isKey, URLs: []string{reg.URL()}, AutoRegister: true, Strategy: tt.strategy}
			cfg := Config{Value: s}
			if tt.isKey {
				cfg = Config{Key: s}
			}
			c, err := NewConverter(cfg, formats)
			if err != nil {
				t.Fatal(err)
			}
			str := envelope(stringSchema, `"plain"`)
			rec := record("orders", "ev-9", str, str)
			err = c.Convert(context.Background(), rec)
			var ce *relay.ConvertError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a poison *relay.ConvertError", err)
			}
			for _, want := range []string{tt.key, "event ev-9", "=TopicNameStrategy", "named record"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
			client, err := NewClient(s)
			if err != nil {
				t.Fatal(err)
			}
			subjects, err := client.Subjects(context.Background())
			if err != nil || len(subjects) != 0 {
				t.Errorf("subjects registered: %q (%v)", subjects, err)
			}
			// A named record is written under its name.
			rec = record("orders", "ev-10", envelope(orderSchema, `{"id":1}`), envelope(orderSchema, `{"id":1}`))
			if err := c.Convert(context.Background(), rec); err != nil {
				t.Fatalf("a record schema: %v", err)
			}
		})
	}
}

// Regression: with use.latest.version the latest version's id was kept
// for the process's life whatever the configuration; Confluent's
// serializer keeps it latest.cache.ttl.sec seconds (-1, its default:
// forever; AbstractKafkaSchemaSerDe's latestVersions, expireAfterWrite),
// then reads the latest version again.
func TestUseLatestVersionCacheTTL(t *testing.T) {
	for _, tt := range []struct {
		name  string
		ttl   time.Duration
		reads int64 // GET …/versions/latest for three records of one schema
		newer bool  // the newer version registered before the third is seen
	}{
		{"forever (-1)", -1, 1, false},
		{"an hour", time.Hour, 1, false},
		{"0: every record", 0, 3, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := srfake.New()
			defer reg.Close()
			var reads atomic.Int64
			reg.Intercept(func(_ http.ResponseWriter, r *http.Request) bool {
				if strings.HasSuffix(r.URL.Path, "/versions/latest") {
					reads.Add(1)
				}
				return false
			})
			id, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: `{"test":"struct","name":"Order"}`, Type: sr.TypeJSON})
			if err != nil {
				t.Fatal(err)
			}
			s := testSide(reg.URL(), false)
			s.AutoRegister, s.UseLatest, s.LatestTTL = false, true, tt.ttl
			c := newConverter(t, Config{Value: s})
			for i := range 2 {
				rec := record("orders", fmt.Sprint("e", i), nil, envelope(orderSchema, `{"id":1}`))
				if err := c.Convert(context.Background(), rec); err != nil {
					t.Fatal(err)
				}
				if got, _ := wire(t, rec.Value); got != id {
					t.Fatalf("id %d, want %d", got, id)
				}
			}
			if _, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: `{"test":"struct","name":"Newer"}`, Type: sr.TypeJSON}); err != nil {
				t.Fatal(err)
			}
			err = c.Convert(context.Background(), record("orders", "e3", nil, envelope(orderSchema, `{"id":1}`)))
			var ce *relay.ConvertError
			switch {
			case tt.newer && (!errors.As(err, &ce) || !strings.Contains(err.Error(), "version 2")):
				t.Errorf("after the TTL, with a newer latest version: err = %v, want a poison error naming version 2", err)
			case !tt.newer && err != nil:
				t.Errorf("within the TTL: %v", err)
			}
			if reads.Load() != tt.reads {
				t.Errorf("%d reads of the latest version, want %d", reads.Load(), tt.reads)
			}
		})
	}
}
