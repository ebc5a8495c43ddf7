package registry

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/outboxrelay/outboxrelay/relay"
)

// FuzzConvert: whatever the record's value holds, Convert does not panic;
// it writes the wire format or refuses the record as poison, leaving it
// as it was.
func FuzzConvert(f *testing.F) {
	for _, s := range []string{
		string(envelope(orderSchema, `{"id":1}`)),
		string(envelope(stringSchema, `"x"`)),
		string(envelope(`{"type":"array","items":{"type":"int32"}}`, `[1,2]`)),
		`{"schema":{"type":"map"},"payload":{}}`,
		`{"schema":{"type":"struct","fields":[{"field":""}]},"payload":1}`,
		`{"schema":[,"payload":}`,
		`not json`,
	} {
		f.Add([]byte(s))
	}
	reg := srfake.New()
	defer reg.Close()
	f.Fuzz(func(t *testing.T, value []byte) {
		c, err := NewConverter(Config{Value: testSide(reg.URL(), false)}, testFormats)
		if err != nil {
			t.Fatal(err)
		}
		orig := string(value)
		rec := record("t", "e1", nil, value)
		err = c.Convert(context.Background(), rec)
		var ce *relay.ConvertError
		switch {
		case err == nil:
			if rec.Value != nil {
				wire(t, rec.Value)
			}
		case errors.As(err, &ce):
			if string(rec.Value) != orig {
				t.Fatalf("a refused record changed: %q → %q", orig, rec.Value)
			}
		default:
			t.Fatalf("err = %v, want nil or a *relay.ConvertError", err)
		}
	})
}
