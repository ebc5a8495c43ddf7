package conformance

import (
	"strings"
	"testing"
)

func TestAsJSON(t *testing.T) {
	for _, tc := range []struct{ in, class, want string }{
		{`k-"1"`, "org.apache.kafka.connect.storage.StringConverter", `"k-\"1\""`},
		{`{"schema":{"type":"string","optional":false},"payload":"a"}`, "org.apache.kafka.connect.json.JsonConverter", `"a"`},
		{`{"a":1}`, "org.apache.kafka.connect.json.JsonConverter", `{"a":1}`},
		{`{"schema":1}`, "org.apache.kafka.connect.json.JsonConverter", `{"schema":1}`},
	} {
		got, err := asJSON([]byte(tc.in), tc.class)
		if err != nil || string(got) != tc.want {
			t.Errorf("asJSON(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	if got, err := asJSON(nil, "x"); got != nil || err != nil {
		t.Errorf("asJSON(nil) = %s, %v", got, err)
	}
	if _, err := asJSON([]byte("not json"), "org.apache.kafka.connect.json.JsonConverter"); err == nil {
		t.Error("asJSON of text under JsonConverter: no error")
	}
}

func TestCompareConverter(t *testing.T) {
	c := &Case{ID: "t", Records: 2}
	conv := converters{key: "org.apache.kafka.connect.storage.StringConverter", value: "org.apache.kafka.connect.json.JsonConverter"}
	hdr := []Header{{Key: "id", Value: []byte("1")}}
	ref := []Record{
		{Topic: "a", Key: []byte("k1"), Headers: hdr, Value: []byte(`{"n":1.5,"f":1.1}`)},
		{Topic: "a", Key: []byte("k2"), Headers: hdr, Value: nil},
	}
	got := []Record{
		{Topic: "a", Key: []byte(`"k1"`), Headers: hdr, Value: []byte(`{"f":1.100000023841858,"n":1.5}`)},
		{Topic: "a", Key: []byte(`"k2"`), Headers: hdr, Value: nil},
	}
	if v := CompareConverter(c, conv, ref, got); !v.Passed() {
		t.Fatalf("equal records: %v", v.Problems)
	}
	got[0].Value = []byte(`{"n":2,"f":1.1}`)
	got[1].Key = []byte(`"k3"`)
	v := CompareConverter(c, conv, ref, got)
	if len(v.Problems) != 3 || !strings.Contains(v.Problems[0], "value") || !strings.Contains(v.Problems[1], `key "k2"`) || !strings.Contains(v.Problems[2], `key "k3"`) {
		t.Fatalf("problems %q", v.Problems)
	}
	if v := CompareConverter(c, conv, ref, got[:1]); v.Passed() {
		t.Fatal("a missing record passed")
	}
}

// Partitions: Kafka partitions by the serialized key, so a registry
// converter's records of a key may be in another partition than
// JsonConverter's (33-three-partitions), but all in one.
func TestCompareConverterPartitions(t *testing.T) {
	c := &Case{ID: "t", Records: 2}
	conv := converters{key: "org.apache.kafka.connect.storage.StringConverter", value: "org.apache.kafka.connect.json.JsonConverter"}
	ref := []Record{{Topic: "a", Partition: 0, Key: []byte("k"), Value: []byte(`1`)}, {Topic: "a", Partition: 0, Key: []byte("k"), Value: []byte(`2`)}}
	got := []Record{{Topic: "a", Partition: 2, Key: []byte(`"k"`), Value: []byte(`1`)}, {Topic: "a", Partition: 2, Key: []byte(`"k"`), Value: []byte(`2`)}}
	if v := CompareConverter(c, conv, ref, got); !v.Passed() {
		t.Fatalf("another partition, one per key: %v", v.Problems)
	}
	got[1].Partition = 1
	if v := CompareConverter(c, conv, ref, got); v.Passed() {
		t.Fatal("one key in two partitions passed")
	}
}

// Keys and null values as a registry converter writes them
// (35-custom-columns, 33-three-partitions, 09-tombstone-off-null): an
// integer key column decodes to 42 where StringConverter wrote "42"; an
// empty key reads back nil from JsonConverter's side and "" from the
// registry's; JsonConverter's JSON null is a null value there.
func TestCompareConverterKeysAndNulls(t *testing.T) {
	c := &Case{ID: "t", Records: 3}
	conv := converters{key: "org.apache.kafka.connect.storage.StringConverter", value: "org.apache.kafka.connect.json.JsonConverter"}
	ref := []Record{{Topic: "a", Key: []byte("42"), Value: []byte(`1`)}, {Topic: "a", Key: nil, Value: []byte(`2`)}, {Topic: "a", Key: []byte("x"), Value: []byte(`null`)}}
	got := []Record{{Topic: "a", Key: []byte(`42`), Value: []byte(`1`)}, {Topic: "a", Key: []byte(`""`), Value: []byte(`2`)}, {Topic: "a", Key: []byte(`"x"`), Value: nil}}
	v := CompareConverter(c, conv, ref, got)
	if !v.Passed() || len(v.Observed) != 1 || v.Observed[0] != "null-value" {
		t.Fatalf("problems %q, observed %q", v.Problems, v.Observed)
	}
	got[0].Key = []byte(`43`)
	if v := CompareConverter(c, conv, ref, got); v.Passed() {
		t.Fatal("key 43 for 42 passed")
	}
}
