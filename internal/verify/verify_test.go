package verify

import (
	"reflect"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	events := []Event{
		{ID: "a1", Key: "a", Order: 1},
		{ID: "a2", Key: "a", Order: 2},
		{ID: "a3", Key: "a", Order: 2, Seq: 1}, // same transaction as a2, after it
		{ID: "b1", Key: "b", Order: 3},
		{ID: "b2", Key: "b", Order: 4},
	}
	d := func(id, key string, part int, off int64) Delivery {
		return Delivery{ID: id, Key: key, Topic: "t", Partition: part, Offset: off}
	}
	cases := []struct {
		name       string
		deliveries []Delivery
		missing    []string
		dups       map[string]int
		unknown    []string
		outOfOrder []Violation
	}{
		{name: "exactly once in order",
			deliveries: []Delivery{d("a1", "a", 0, 0), d("a2", "a", 0, 1), d("a3", "a", 0, 2), d("b1", "b", 1, 0), d("b2", "b", 1, 1)},
			dups:       map[string]int{}},
		{name: "redelivery after a crash repeats a tail: duplicates, order intact",
			deliveries: []Delivery{d("a1", "a", 0, 0), d("a2", "a", 0, 1), d("a1", "a", 0, 2), d("a2", "a", 0, 3), d("a3", "a", 0, 4), d("b1", "b", 1, 0), d("b2", "b", 1, 1)},
			dups:       map[string]int{"a1": 1, "a2": 1}},
		{name: "missing and unknown",
			deliveries: []Delivery{d("a1", "a", 0, 0), d("a3", "a", 0, 1), d("zz", "z", 0, 2), d("b1", "b", 1, 0)},
			missing:    []string{"a2", "b2"}, dups: map[string]int{}, unknown: []string{"zz"}},
		{name: "first deliveries out of commit order",
			deliveries: []Delivery{d("a2", "a", 0, 0), d("a1", "a", 0, 1), d("a3", "a", 0, 2), d("b1", "b", 1, 0), d("b2", "b", 1, 1)},
			dups:       map[string]int{}, outOfOrder: []Violation{{Key: "a", Earlier: "a1", Later: "a2"}}},
		{name: "rows of one transaction out of their order",
			deliveries: []Delivery{d("a1", "a", 0, 0), d("a3", "a", 0, 1), d("a2", "a", 0, 2), d("b1", "b", 1, 0), d("b2", "b", 1, 1)},
			dups:       map[string]int{}, outOfOrder: []Violation{{Key: "a", Earlier: "a2", Later: "a3"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Check(events, c.deliveries)
			if !reflect.DeepEqual(r.Missing, c.missing) || !reflect.DeepEqual(r.Duplicates, c.dups) ||
				!reflect.DeepEqual(r.Unknown, c.unknown) || !reflect.DeepEqual(r.OutOfOrder, c.outOfOrder) {
				t.Fatalf("got %s\n%#v", r, r)
			}
			if r.OK() != (len(c.missing) == 0 && len(c.outOfOrder) == 0) {
				t.Fatalf("OK() = %v for %s", r.OK(), r)
			}
		})
	}
}

func TestReadEmitted(t *testing.T) {
	got, err := ReadEmitted(strings.NewReader("# id\troute\tkey\n\ne-1\torders\to-1\r\ne-2\tpayments\t\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Emitted{{Event{ID: "e-1", Key: "o-1", Order: 3}, "orders"}, {Event{ID: "e-2", Key: "", Order: 4}, "payments"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadEmitted = %+v, want %+v", got, want)
	}
	for _, bad := range []string{"e-1 orders o-1\n", "e-1\torders\n", "\torders\tk\n", "e\t\tk\n"} {
		if _, err := ReadEmitted(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// Regression: review-16 finding 4. --where and --order-by were silently
// ignored with --emitted.
func TestOptionsCheck(t *testing.T) {
	if err := (Options{Emitted: strings.NewReader("")}).check(); err != nil {
		t.Errorf("--emitted alone: %v", err)
	}
	if err := (Options{Where: "true", OrderBy: "id"}).check(); err != nil {
		t.Errorf("--where and --order-by on tables: %v", err)
	}
	for _, o := range []Options{{Emitted: strings.NewReader(""), Where: "true"}, {Emitted: strings.NewReader(""), OrderBy: "id"}} {
		if err := o.check(); err == nil || !strings.Contains(err.Error(), "--emitted") {
			t.Errorf("%+v: err %v, want a refusal naming --emitted", o, err)
		}
	}
}
