package registry

import (
	"context"
	"net/http"
	"testing"

	"github.com/twmb/franz-go/pkg/sr/srfake"
)

func TestInspectReportsSubjectsWithoutRegistering(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	c := newConverter(t, Config{Key: testSide(reg.URL(), true), Value: testSide(reg.URL(), false)})
	rec := record("orders", "e1", envelope(stringSchema, `"k"`), envelope(orderSchema, `{"id":1}`))
	subs, err := c.Inspect(context.Background(), rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(subs) != 2 || subs[0].Name != "orders-key" || subs[1].Name != "orders-value" || subs[1].Latest.Version != 0 || !subs[1].Compatible {
		t.Fatalf("new subjects: %+v", subs)
	}
	if reg.SubjectExists("orders-value") {
		t.Fatal("Inspect registered a schema")
	}
	// Once registered: the latest version, and the registry's verdict.
	if err := c.Convert(context.Background(), record("orders", "e1", envelope(stringSchema, `"k"`), envelope(orderSchema, `{"id":1}`))); err != nil {
		t.Fatal(err)
	}
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/compatibility/subjects/orders-value/versions/latest" {
			return false
		}
		w.Write([]byte(`{"is_compatible":false,"messages":["READER_FIELD_MISSING_DEFAULT_VALUE: id"]}`))
		return true
	})
	subs, err = c.Inspect(context.Background(), rec)
	if err != nil {
		t.Fatal(err)
	}
	v := subs[1]
	if v.Latest.Version != 1 || v.Latest.ID == 0 || v.Compatible || len(v.Messages) != 1 || !subs[0].Compatible {
		t.Fatalf("registered subjects: %+v", subs)
	}
	isKey, n, err := c.Ping(context.Background())
	if err != nil || isKey || n != 2 {
		t.Errorf("Ping = %v, %d, %v; want the value side's registry with 2 subjects", isKey, n, err)
	}
}
