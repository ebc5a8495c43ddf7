package check

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/outboxrelay/outboxrelay/registry"
	"github.com/outboxrelay/outboxrelay/registry/registrytest"
	"github.com/outboxrelay/outboxrelay/router"
)

func testConverter(t *testing.T, cfg registry.Config) *registry.Converter {
	t.Helper()
	conv, err := registry.NewConverter(cfg, registrytest.Formats(router.AvroConverterClass))
	if err != nil {
		t.Fatal(err)
	}
	return conv
}

// check reaches the registry with the configured credentials, and names
// each subject of the sampled topics with its latest version.
func TestRegistryChecks(t *testing.T) {
	reg := srfake.New(srfake.WithAuth("Basic " + base64.StdEncoding.EncodeToString([]byte("u:p"))))
	defer reg.Close()
	if _, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: `{"connect":"string"}`, Type: sr.TypeJSON}); err != nil {
		t.Fatal(err)
	}
	side := registry.Side{Class: router.AvroConverterClass, URLs: []string{reg.URL()}, User: "u", Password: "p", AutoRegister: true}
	cfg := registry.Config{Value: side}
	c := &checker{samples: map[string]router.Record{}}
	for _, topic := range []string{"orders", "payments"} {
		c.keepSample(&router.Record{Topic: topic, Value: []byte(`{"schema":{"type":"string","optional":false},"payload":"x"}`)})
	}
	c.registryChecks(context.Background(), cfg, testConverter(t, cfg))
	var b bytes.Buffer
	if failed := Format(&b, c.results); failed != 0 {
		t.Fatalf("%d failed:\n%s", failed, b.String())
	}
	for _, want := range []string{
		"✓ schema registry: " + reg.URL() + " answers (1 subjects)",
		"✓ schema subject orders-value: latest version 1 (id 1); the next schema is compatible",
		"✓ schema subject payments-value: new: the first record registers its schema (version 1)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("check output lacks %q:\n%s", want, b.String())
		}
	}
	if reg.SubjectExists("payments-value") {
		t.Error("check registered a schema")
	}

	side.Password = "wrong"
	cfg = registry.Config{Value: side}
	c = &checker{samples: map[string]router.Record{}}
	c.registryChecks(context.Background(), cfg, testConverter(t, cfg))
	b.Reset()
	if failed := Format(&b, c.results); failed != 1 || !strings.Contains(b.String(), "HTTP 403") || !strings.Contains(b.String(), "value.converter.basic.auth.user.info") {
		t.Errorf("refused credentials:\n%s", b.String())
	}
}
