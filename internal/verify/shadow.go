package verify

import (
	"fmt"
	"sort"
	"strings"

	"github.com/outboxrelay/outboxrelay/internal/conformance"
)

// ShadowReport is what CompareShadow found between the live connector's
// records (Debezium's) and a shadow run's, matched by event id. Only
// Differences, OnlyLive, OnlyShadow and OutOfOrder count against the
// shadow; the rest is information.
type ShadowReport struct {
	Live, Shadow int // records read
	Matched      int // events both sides have
	// BeforeShadow counts the live records, per partition, before the
	// first event the shadow also has there: committed before the shadow's
	// slot existed.
	BeforeShadow int
	// Documented counts the pairs equal only under a documented
	// difference (docs/compatibility.md), by its name.
	Documented  map[string]int
	Differences []string // "event <id>: what differs"
	OnlyLive    []string // event ids after the shadow started that it lacks
	OnlyShadow  []string // event ids the live side lacks
	OutOfOrder  []string // "key <k>: …"
	// Duplicates counts the extra records per side (at-least-once
	// delivery on either side: not a difference, when the resent record is
	// the same as the other side's).
	DuplicatesLive, DuplicatesShadow int
}

// OK reports whether the shadow matched the live side but for documented
// differences.
func (r ShadowReport) OK() bool {
	return len(r.Differences)+len(r.OnlyLive)+len(r.OnlyShadow)+len(r.OutOfOrder) == 0
}

// ShadowCase is the conformance case a shadow comparison applies: the
// documented differences the connector's configuration allows.
func ShadowCase(expandJSON, extendedHeaders bool, decimalMode string) *conformance.Case {
	c := &conformance.Case{ID: "shadow", Records: 1}
	if expandJSON { // first: it names what the payload's numbers show
		c.Differences = append(c.Differences, "json-expansion")
	}
	c.Differences = append(c.Differences, "float-text", "unicode-escapes")
	if decimalMode == "precise" {
		c.Differences = append(c.Differences, "decimal-precise")
	}
	if extendedHeaders {
		c.Differences = append(c.Differences, "run-id")
		c.Config = append(c.Config, conformance.Override{Key: "extended.headers.enabled", Value: "true"})
	}
	return c
}

// CompareShadow matches live (the connector's topics) and shadow (the
// shadow run's, topics under prefix) record by record by the idHeader
// value and compares key, headers, value (conformance.Compare, with c's
// documented differences), topic and partition, and each key's order of
// events on both sides. A record sent again (at-least-once) is compared
// too: it must equal the other side's. Each side's records come per partition in offset
// order (as Topics reads them).
func CompareShadow(c *conformance.Case, live, shadow []conformance.Record, idHeader, prefix string) ShadowReport {
	rep := ShadowReport{Live: len(live), Shadow: len(shadow), Documented: map[string]int{}}
	sh, dupS := byID(shadow, idHeader)
	lv, dupL := byID(live, idHeader)
	rep.DuplicatesLive, rep.DuplicatesShadow = dupL, dupS
	started := startedAt(live, sh, idHeader)
	var liveOrder, shadowOrder = map[string][]string{}, map[string][]string{}
	for i, d := range live {
		id := headerValue(d, idHeader)
		if i < started[partOf(d)] {
			rep.BeforeShadow++
			continue
		}
		j, ok := sh[id]
		if lv[id] != i { // a resend: it must be the same record
			if ok {
				comparePair(c, &rep, id, d, shadow[j], prefix)
			}
			continue
		}
		if !ok {
			rep.OnlyLive = append(rep.OnlyLive, id)
			continue
		}
		rep.Matched++
		liveOrder[string(d.Key)] = append(liveOrder[string(d.Key)], id)
		comparePair(c, &rep, id, d, shadow[j], prefix)
	}
	for j, r := range shadow {
		id := headerValue(r, idHeader)
		i, ok := lv[id]
		if sh[id] != j { // a resend: it must be the same record
			if ok && i >= started[partOf(live[i])] {
				comparePair(c, &rep, id, live[i], r, prefix)
			}
			continue
		}
		if !ok {
			rep.OnlyShadow = append(rep.OnlyShadow, id)
			continue
		}
		if i >= started[partOf(live[i])] {
			shadowOrder[string(r.Key)] = append(shadowOrder[string(r.Key)], id)
		}
	}
	rep.OutOfOrder = compareOrder(liveOrder, shadowOrder)
	sort.Strings(rep.OnlyLive)
	sort.Strings(rep.OnlyShadow)
	return rep
}

// comparePair compares one event's two records.
func comparePair(c *conformance.Case, rep *ShadowReport, id string, d, r conformance.Record, prefix string) {
	if want := prefix + d.Topic; r.Topic != want {
		rep.Differences = append(rep.Differences, fmt.Sprintf("event %s: topic: live %s, shadow %s (want %s)", id, d.Topic, r.Topic, want))
	}
	if d.Partition != r.Partition {
		rep.Differences = append(rep.Differences, fmt.Sprintf("event %s: partition: live %s/%d, shadow %s/%d", id, d.Topic, d.Partition, r.Topic, r.Partition))
	}
	r.Topic, r.Partition, r.Offset, d.Offset = d.Topic, d.Partition, 0, 0
	v := conformance.Compare(c, []conformance.Record{d}, []conformance.Record{r})
	for _, name := range v.Observed {
		rep.Documented[name]++
	}
	for _, p := range v.Problems {
		p = strings.ReplaceAll(strings.ReplaceAll(p, "Debezium", "live"), "outboxrelay", "shadow")
		rep.Differences = append(rep.Differences, fmt.Sprintf("event %s: %s", id, p))
	}
}

// byID indexes records by event id (the first record of each) and counts
// the extra ones.
func byID(recs []conformance.Record, idHeader string) (map[string]int, int) {
	idx, dups := make(map[string]int, len(recs)), 0
	for i, r := range recs {
		id := headerValue(r, idHeader)
		if _, seen := idx[id]; seen {
			dups++
			continue
		}
		idx[id] = i
	}
	return idx, dups
}

type part struct {
	topic     string
	partition int
}

func partOf(r conformance.Record) part { return part{r.Topic, r.Partition} }

// startedAt is, per live partition, the index in live of its first record
// whose event the shadow has (len(live) where it has none: the whole
// partition is before the shadow, or lost by it, which OnlyLive cannot
// tell apart; a partition the shadow never wrote to shows as before).
func startedAt(live []conformance.Record, shadow map[string]int, idHeader string) map[part]int {
	first := map[part]int{}
	for i, d := range live {
		p := partOf(d)
		if _, done := first[p]; done {
			continue
		}
		if _, ok := shadow[headerValue(d, idHeader)]; ok {
			first[p] = i
		}
	}
	for _, d := range live {
		if _, ok := first[partOf(d)]; !ok {
			first[partOf(d)] = len(live)
		}
	}
	return first
}

// compareOrder reports each key whose events, among those both sides
// have, come in another order on the shadow's side.
func compareOrder(live, shadow map[string][]string) []string {
	var out []string
	for key, want := range live {
		got := shadow[key]
		for i := range want {
			if i >= len(got) || got[i] != want[i] {
				g := "nothing"
				if i < len(got) {
					g = "event " + got[i]
				}
				out = append(out, fmt.Sprintf("key %q: its event %d is %s on the live side, %s on the shadow's", key, i+1, want[i], g))
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

func headerValue(r conformance.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// String is the report as `outboxrelay verify --shadow` prints it.
func (r ShadowReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "live records %d, shadow records %d; events matched %d; live records before the shadow started %d; duplicates: live %d, shadow %d\n",
		r.Live, r.Shadow, r.Matched, r.BeforeShadow, r.DuplicatesLive, r.DuplicatesShadow)
	names := make([]string, 0, len(r.Documented))
	for n := range r.Documented {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "documented difference %s: %d events (%s)\n", n, r.Documented[n], conformance.Differences[n].Doc)
	}
	fmt.Fprintf(&b, "differences %d, only live %d, only shadow %d, keys out of order %d\n", len(r.Differences), len(r.OnlyLive), len(r.OnlyShadow), len(r.OutOfOrder))
	list := func(what string, items []string) {
		const shown = 20
		for i, it := range items {
			if i == shown {
				fmt.Fprintf(&b, "  … %d more %s\n", len(items)-shown, what)
				break
			}
			fmt.Fprintf(&b, "  %s: %s\n", what, it)
		}
	}
	list("difference", r.Differences)
	list("only live", r.OnlyLive)
	list("only shadow", r.OnlyShadow)
	list("order", r.OutOfOrder)
	return strings.TrimSuffix(b.String(), "\n")
}
