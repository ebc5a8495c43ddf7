package kafkabatch

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// sections reads a capture file of "== TOPIC-0" headers and lines under them.
func sections(t *testing.T, name string) map[string][]string {
	t.Helper()
	data, err := os.ReadFile("testdata/java/" + name)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	topic := ""
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if h, ok := strings.CutPrefix(line, "== "); ok {
			topic = strings.TrimSuffix(h, "-0")
			out[topic] = nil
			continue
		}
		out[topic] = append(out[topic], line)
	}
	return out
}

// TestCommittedMatchesJava: out of the captured batches, given the aborted
// transactions of the broker's transaction index (what a read_committed
// fetch lists, aborted.txt), Committed keeps the records Kafka's console
// consumer delivered reading read_committed (readcommitted.txt).
func TestCommittedMatchesJava(t *testing.T) {
	abortedLines, delivered := sections(t, "aborted.txt"), sections(t, "readcommitted.txt")
	for _, topic := range javaTopics {
		t.Run(topic, func(t *testing.T) {
			batches, err := DecodeAll(readSegment(t, topic))
			if err != nil {
				t.Fatal(err)
			}
			var aborted []AbortedTxn
			for _, line := range abortedLines[topic] {
				e := parseDumpFields(line)
				aborted = append(aborted, AbortedTxn{ProducerID: atoi(t, e["producerId"]), FirstOffset: atoi(t, e["firstOffset"])})
			}
			var got, want []int64
			for _, b := range Committed(batches, aborted) {
				for _, r := range b.Records {
					got = append(got, b.BaseOffset+int64(r.OffsetDelta))
				}
			}
			for _, line := range delivered[topic] {
				n, _, _ := strings.Cut(strings.TrimPrefix(line, "Offset:"), "\t")
				want = append(want, atoi(t, strings.TrimSpace(n)))
			}
			if !slices.Equal(got, want) {
				t.Errorf("read_committed offsets: ours %v, Java's console consumer %v (aborted transactions %v)", got, want, aborted)
			}
		})
	}
}

func TestCommitted(t *testing.T) {
	data := func(off int64, pid int64, txn bool) Batch {
		b := Batch{BaseOffset: off, ProducerID: pid, Records: []Record{{}}}
		if txn {
			b.Attributes = AttrTransactional
		}
		return b
	}
	marker := func(off, pid int64, commit bool) Batch {
		typ := byte(ControlAbort)
		if commit {
			typ = ControlCommit
		}
		return Batch{BaseOffset: off, ProducerID: pid, Attributes: AttrTransactional | AttrControl,
			Records: []Record{{Key: []byte{0, 0, 0, typ}, Value: []byte{0, 0, 0, 0, 0, 0}}}}
	}
	batches := []Batch{
		data(0, 1, true),   // producer 1, committed at 2
		data(1, 2, true),   // producer 2, aborted at 3
		marker(2, 1, true), //
		marker(3, 2, false),
		data(4, 2, true),   // producer 2 again, a new transaction: committed at 6
		data(5, -1, false), // no producer
		marker(6, 2, true),
		data(7, 3, false), // idempotent, not transactional: never aborted
	}
	var got []int64
	for _, b := range Committed(batches, []AbortedTxn{{ProducerID: 2, FirstOffset: 1}, {ProducerID: 3, FirstOffset: 7}}) {
		got = append(got, b.BaseOffset)
	}
	if want := []int64{0, 4, 5, 7}; !slices.Equal(got, want) {
		t.Errorf("Committed kept %v, want %v", got, want)
	}
}
