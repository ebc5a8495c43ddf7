package connectschema

import (
	"strings"
	"testing"
)

func TestSplitAndParse(t *testing.T) {
	rec := `{"schema":{"type":"struct","fields":[{"type":"string","optional":true,"field":"a\"}"},{"type":"array","items":{"type":"int64","optional":true},"optional":true,"field":"n"}],"optional":true,"name":"payload","version":2},"payload":{"a\"}":"x","n":[1]}}`
	sch, pay, err := SplitEnvelope([]byte(rec))
	if err != nil {
		t.Fatal(err)
	}
	if string(pay) != `{"a\"}":"x","n":[1]}` {
		t.Fatalf("payload %s", pay)
	}
	s, err := Parse(sch)
	if err != nil {
		t.Fatal(err)
	}
	if s.Type != Struct || s.Name != "payload" || s.Version != 2 || !s.Optional || len(s.Fields) != 2 {
		t.Fatalf("%+v", s)
	}
	if f := s.Field("n"); f == nil || f.Schema.Type != Array || f.Schema.Items.Type != Int64 {
		t.Fatalf("field n: %+v", f)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"type":"uuid"}`, `unknown type "uuid"`},
		{`{"type":"struct","fields":[{"type":"string"}]}`, "field 0 has no name"},
		{`{"type":"struct","fields":[{"type":"array","field":"a"}]}`, "a[]: has no items schema"},
		{`{"type":"string","parameters":[1]}`, "parameters: not an object"},
		{`{`, "unexpected EOF"},
	} {
		if _, err := Parse([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%s) = %v, want %q", tc.in, err, tc.want)
		}
	}
	for _, in := range []string{`"x"`, `{"schema":"x","payload":1}`, `{"schema":{"type":"string"}}`, `{"schema":{"a":"}`} {
		if _, _, err := SplitEnvelope([]byte(in)); err == nil {
			t.Errorf("SplitEnvelope(%s): no error", in)
		}
	}
}

func TestParameters(t *testing.T) {
	s, err := Parse([]byte(`{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"2","connect.decimal.precision":"10"},"default":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Parameters) != 2 || s.Parameters[0] != (Parameter{"scale", "2"}) || s.Default != nil {
		t.Fatalf("%+v", s)
	}
}

func TestSplitKnown(t *testing.T) {
	rec := []byte(`{"schema":{"type":"string","optional":false},"payload":"a"}`)
	schema, payload, err := SplitEnvelope(rec)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := SplitKnown(rec, schema); !ok || string(got) != string(payload) {
		t.Fatalf("SplitKnown = %s, %v; want %s", got, ok, payload)
	}
	for _, other := range []string{`{"type":"string","optional":true}`, `{"type":"string"`, ``} {
		if _, ok := SplitKnown(rec, []byte(other)); ok {
			t.Errorf("SplitKnown with schema %s: ok", other)
		}
	}
}
