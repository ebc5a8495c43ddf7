// Package verify checks a relay's output against its input after the fact:
// which outbox events never reached Kafka, which arrived more than once, and
// which aggregates saw their first deliveries out of commit order. The fault
// tests assert on its Report, and users run it (outboxrelay verify) after an
// incident.
//
// Check is pure; Outbox and Topics read the two sides.
package verify

import (
	"fmt"
	"sort"
	"strings"
)

// Event is one outbox row: its event id, aggregate key and its position in
// commit order (any number that increases with commit order; ties allowed
// for rows of one transaction, which are then compared by Seq).
type Event struct {
	ID    string
	Key   string
	Order int64
	Seq   int64 // order within the transaction (e.g. the row's sequence)
}

// Delivery is one record read from Kafka.
type Delivery struct {
	ID        string // the id header
	Key       string
	Topic     string
	Partition int
	Offset    int64
}

// Violation is an aggregate whose first deliveries are not in commit order:
// Later was committed after Earlier but reached Kafka first.
type Violation struct {
	Key            string
	Earlier, Later string
}

// Report is what Check found. Missing and Unknown are sorted.
type Report struct {
	Events     int            // outbox rows checked
	Deliveries int            // records read
	Missing    []string       // event ids with no delivery
	Duplicates map[string]int // event id → extra deliveries (count − 1)
	Unknown    []string       // delivered ids that are not outbox rows checked
	OutOfOrder []Violation
}

// Duplicated is the number of extra deliveries.
func (r Report) Duplicated() int {
	n := 0
	for _, d := range r.Duplicates {
		n += d
	}
	return n
}

// OK reports whether nothing is missing and order held. Duplicates are
// allowed: delivery is at-least-once.
func (r Report) OK() bool { return len(r.Missing) == 0 && len(r.OutOfOrder) == 0 }

// String summarizes the report in a few lines, with up to 10 ids of each
// kind.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "events %d, deliveries %d, missing %d, duplicated %d (%d events), unknown %d, out of order %d",
		r.Events, r.Deliveries, len(r.Missing), r.Duplicated(), len(r.Duplicates), len(r.Unknown), len(r.OutOfOrder))
	list := func(name string, ids []string) {
		if len(ids) == 0 {
			return
		}
		more := ""
		if len(ids) > 10 {
			ids, more = ids[:10], fmt.Sprintf(" (and %d more)", len(ids)-10)
		}
		fmt.Fprintf(&b, "\n%s: %s%s", name, strings.Join(ids, ", "), more)
	}
	list("missing", r.Missing)
	list("unknown", r.Unknown)
	for i, v := range r.OutOfOrder {
		if i == 10 {
			fmt.Fprintf(&b, "\n(and %d more order violations)", len(r.OutOfOrder)-10)
			break
		}
		fmt.Fprintf(&b, "\nout of order: aggregate %q: %s (committed later) delivered before %s", v.Key, v.Later, v.Earlier)
	}
	return b.String()
}

// Check compares outbox events with Kafka deliveries.
//
// Order: for each aggregate key, the FIRST delivery of each event, in the
// order Kafka holds them (partition, offset), must follow commit order.
// Redeliveries after a crash legitimately repeat earlier events later in the
// log, so only first deliveries count. One key lives on one partition
// unless a partition placement or a partition-count change moved it; those
// are compared within each partition.
func Check(events []Event, deliveries []Delivery) Report {
	r := Report{Events: len(events), Deliveries: len(deliveries), Duplicates: map[string]int{}}
	byID := make(map[string]*Event, len(events))
	for i := range events {
		byID[events[i].ID] = &events[i]
	}
	sorted := append([]Delivery(nil), deliveries...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		if a.Partition != b.Partition {
			return a.Partition < b.Partition
		}
		return a.Offset < b.Offset
	})
	seen := make(map[string]int, len(events))
	type stream struct {
		topic     string
		partition int
		key       string
	}
	last := map[stream]*Event{}
	unknown := map[string]bool{}
	for _, d := range sorted {
		ev, ok := byID[d.ID]
		if !ok {
			unknown[d.ID] = true
			continue
		}
		seen[d.ID]++
		if seen[d.ID] > 1 {
			continue
		}
		s := stream{d.Topic, d.Partition, ev.Key}
		if prev := last[s]; prev != nil && before(ev, prev) {
			r.OutOfOrder = append(r.OutOfOrder, Violation{Key: ev.Key, Earlier: ev.ID, Later: prev.ID})
		}
		last[s] = ev
	}
	for _, ev := range events {
		switch n := seen[ev.ID]; {
		case n == 0:
			r.Missing = append(r.Missing, ev.ID)
		case n > 1:
			r.Duplicates[ev.ID] = n - 1
		}
	}
	for id := range unknown {
		r.Unknown = append(r.Unknown, id)
	}
	sort.Strings(r.Missing)
	sort.Strings(r.Unknown)
	return r
}

// before reports whether a was committed before b.
func before(a, b *Event) bool {
	if a.Order != b.Order {
		return a.Order < b.Order
	}
	return a.Seq < b.Seq
}
