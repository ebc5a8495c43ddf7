package verify

import (
	"fmt"
	"strings"
	"testing"

	"github.com/outboxrelay/outboxrelay/internal/conformance"
)

func rec(topic string, partition int, id, key, value string) conformance.Record {
	return conformance.Record{Topic: topic, Partition: partition, Key: []byte(key), Value: []byte(value),
		Headers: []conformance.Header{{Key: "id", Value: []byte(id)}, {Key: "eventType", Value: []byte("Created")}}}
}

// records is n events e1..en on topic (prefixed for the shadow), keys a/b
// alternating, all on partition 0.
func records(topic string, from, to int) []conformance.Record {
	var out []conformance.Record
	for i := from; i <= to; i++ {
		out = append(out, rec(topic, 0, fmt.Sprintf("e%d", i), []string{"a", "b"}[i%2], fmt.Sprintf(`{"n":%d}`, i)))
	}
	return out
}

// TestCompareShadow: the shadow run's records against the live
// connector's, by event id.
func TestCompareShadow(t *testing.T) {
	c := ShadowCase(true, false, "string")
	for _, tc := range []struct {
		name         string
		live, shadow []conformance.Record
		edit         func(live, shadow []conformance.Record)
		ok           bool
		want         []string // in the report
	}{
		{"clean, the shadow started at e3", records("orders", 1, 6), records("shadow.orders", 3, 6), nil, true,
			[]string{"events matched 4", "before the shadow started 2", "differences 0, only live 0, only shadow 0, keys out of order 0"}},
		{"a planted difference: one value altered", records("orders", 1, 4), records("shadow.orders", 1, 4),
			func(_, s []conformance.Record) { s[2].Value = []byte(`{"n":333}`) }, false,
			[]string{"differences 1", `difference: event e3: orders/0 offset 0: value: live "{\"n\":3}", shadow "{\"n\":333}"`}},
		{"a header differs", records("orders", 1, 2), records("shadow.orders", 1, 2),
			func(_, s []conformance.Record) { s[1].Headers[1].Value = []byte("Updated") }, false,
			[]string{"difference: event e2: orders/0 offset 0: header eventType: live \"Created\", shadow \"Updated\""}},
		{"a key differs", records("orders", 1, 2), records("shadow.orders", 1, 2),
			func(_, s []conformance.Record) { s[0].Key = []byte("z") }, false, []string{"event e1", "key: live \"b\", shadow \"z\""}},
		{"the shadow lost an event after it started", records("orders", 1, 4), append(records("shadow.orders", 1, 2), records("shadow.orders", 4, 4)...), nil, false,
			[]string{"only live 1", "only live: e3"}},
		{"an event only the shadow has", records("orders", 1, 2), records("shadow.orders", 1, 3), nil, false, []string{"only shadow: e3"}},
		{"another partition", records("orders", 1, 2), records("shadow.orders", 1, 2),
			func(_, s []conformance.Record) { s[1].Partition = 1 }, false, []string{"event e2: partition: live orders/0, shadow shadow.orders/1"}},
		{"one key's events in another order", records("orders", 1, 4), records("shadow.orders", 1, 4),
			func(_, s []conformance.Record) { s[0], s[2] = s[2], s[0] }, false, []string{`key "b": its event 1 is e1 on the live side, event e3 on the shadow's`}},
		{"JSON expansion: documented", records("orders", 1, 1), records("shadow.orders", 1, 1),
			func(l, _ []conformance.Record) { l[0].Value = []byte(`{"n":1.0}`) }, true, []string{"documented difference json-expansion: 1 events"}},
		{"an altered record sent again is a difference", records("orders", 1, 2), append(records("shadow.orders", 1, 2), rec("shadow.orders", 0, "e1", "b", `{"n":"altered"}`)), nil, false,
			[]string{"duplicates: live 0, shadow 1", `difference: event e1`}},
		{"duplicates on either side are not differences", append(records("orders", 1, 2), records("orders", 2, 2)...), records("shadow.orders", 1, 2), nil, true,
			[]string{"duplicates: live 1, shadow 0"}},
	} {
		if tc.edit != nil {
			tc.edit(tc.live, tc.shadow)
		}
		rep := CompareShadow(c, tc.live, tc.shadow, "id", "shadow.")
		out := rep.String()
		if rep.OK() != tc.ok {
			t.Errorf("%s: OK() = %v, want %v\n%s", tc.name, rep.OK(), tc.ok, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: the report lacks %q:\n%s", tc.name, w, out)
			}
		}
	}
}
