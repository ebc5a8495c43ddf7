package kafkabatch

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The batches under testdata/java were written by Kafka 4.1.1's Java
// producer to the test bed's broker and copied from its log segments
// (testdata/java/README.md). sent.tsv lists what the producer was given;
// dumplog.txt is what Kafka's own DumpLogSegments reads in the segments.
// Both are independent of this package's code.

var javaTopics = []string{"capture-txn", "capture-idem", "capture-plain", "capture-gzip", "capture-lz4", "capture-zstd", "capture-snappy"}

// dumpEntry is one line of DumpLogSegments: a batch, or a record ("| " lines).
type dumpEntry map[string]string

type dumpBatch struct {
	fields  dumpEntry
	records []dumpEntry
}

// parseDumpFields reads "name: value" pairs up to the first field whose
// value may hold spaces (a record's key and payload, which sent.tsv checks).
func parseDumpFields(line string) dumpEntry {
	e := dumpEntry{}
	tok := strings.Fields(line)
	for i := 0; i+1 < len(tok); i += 2 {
		name := strings.TrimSuffix(tok[i], ":")
		if name == "key" || name == "payload" {
			break
		}
		e[name] = tok[i+1]
	}
	return e
}

func loadDump(t *testing.T) map[string][]dumpBatch {
	t.Helper()
	f, err := os.Open("testdata/java/dumplog.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]dumpBatch{}
	topic := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "== "):
			topic = strings.TrimSuffix(strings.TrimPrefix(line, "== "), "-0")
		case strings.HasPrefix(line, "baseOffset: "):
			out[topic] = append(out[topic], dumpBatch{fields: parseDumpFields(line)})
		case strings.HasPrefix(line, "| "):
			bs := out[topic]
			bs[len(bs)-1].records = append(bs[len(bs)-1].records, parseDumpFields(line[2:]))
		case line != "":
			t.Fatalf("dumplog.txt: unexpected line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	if s == "-" {
		return nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("sent.tsv: %q: %v", s, err)
	}
	return b
}

// loadSent reads sent.tsv: per topic, the messages in the order sent.
func loadSent(t *testing.T) map[string][]Message {
	t.Helper()
	data, err := os.ReadFile("testdata/java/sent.tsv")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]Message{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 6 {
			t.Fatalf("sent.tsv: %d fields in %q", len(f), line)
		}
		ts, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		m := Message{Timestamp: ts, Key: unhex(t, f[3]), Value: unhex(t, f[4])}
		if f[5] != "" {
			for _, h := range strings.Split(f[5], ";") {
				k, v, _ := strings.Cut(h, "=")
				m.Headers = append(m.Headers, Header{Key: string(unhex(t, k)), Value: unhex(t, v)})
			}
		}
		out[f[0]] = append(out[f[0]], m)
	}
	return out
}

func readSegment(t *testing.T, topic string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata/java", topic+"-0.log"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("dumplog.txt: %q: %v", s, err)
	}
	return n
}

// TestDecodeJavaBatches decodes every batch the Java producer and the
// broker wrote and compares each field with what DumpLogSegments read.
func TestDecodeJavaBatches(t *testing.T) {
	dump := loadDump(t)
	for _, topic := range javaTopics {
		t.Run(topic, func(t *testing.T) {
			seg := readSegment(t, topic)
			batches, err := DecodeAll(seg)
			if err != nil {
				t.Fatal(err)
			}
			want := dump[topic]
			if len(batches) != len(want) {
				t.Fatalf("%d batches decoded, DumpLogSegments read %d", len(batches), len(want))
			}
			for i := range batches {
				compareDumpBatch(t, &batches[i], want[i])
			}
		})
	}
}

func compareDumpBatch(t *testing.T, b *Batch, d dumpBatch) {
	t.Helper()
	f := d.fields
	got := map[string]int64{
		"baseOffset": b.BaseOffset, "lastOffset": b.BaseOffset + int64(b.LastOffsetDelta),
		"count": int64(len(b.Records)), "baseSequence": int64(b.BaseSequence), "lastSequence": int64(b.LastSequence()),
		"producerId": b.ProducerID, "producerEpoch": int64(b.ProducerEpoch),
		"partitionLeaderEpoch": int64(b.PartitionLeaderEpoch), "CreateTime": b.MaxTimestamp,
	}
	for name, v := range got {
		if w := atoi(t, f[name]); v != w {
			t.Errorf("batch at offset %s: %s = %d, DumpLogSegments read %d", f["baseOffset"], name, v, w)
		}
	}
	if s := strconv.FormatBool(b.Transactional()); s != f["isTransactional"] {
		t.Errorf("batch at offset %s: transactional %s, DumpLogSegments read %s", f["baseOffset"], s, f["isTransactional"])
	}
	if s := strconv.FormatBool(b.Control()); s != f["isControl"] {
		t.Errorf("batch at offset %s: control %s, DumpLogSegments read %s", f["baseOffset"], s, f["isControl"])
	}
	codec := "none"
	if c := b.Compression(); c != 0 {
		codec = c.String()
	}
	if codec != f["compresscodec"] {
		t.Errorf("batch at offset %s: codec %s, DumpLogSegments read %s", f["baseOffset"], codec, f["compresscodec"])
	}
	enc, err := Encode(b)
	if err != nil {
		t.Fatal(err)
	}
	if crc := strconv.FormatUint(uint64(uint32(enc[17])<<24|uint32(enc[18])<<16|uint32(enc[19])<<8|uint32(enc[20])), 10); b.Compression() == 0 && crc != f["crc"] {
		t.Errorf("batch at offset %s: re-encoded CRC %s, DumpLogSegments read %s", f["baseOffset"], crc, f["crc"])
	}
	for i, r := range b.Records {
		compareDumpRecord(t, b, i, &r, d.records[i])
	}
}

func compareDumpRecord(t *testing.T, b *Batch, i int, r *Record, d dumpEntry) {
	t.Helper()
	seq := int64(NoSequence)
	if b.BaseSequence != NoSequence {
		seq = int64(IncrementSequence(b.BaseSequence, r.OffsetDelta))
	}
	keys := make([]string, len(r.Headers))
	for j, h := range r.Headers {
		keys[j] = h.Key
	}
	got := map[string]string{
		"offset":     strconv.FormatInt(b.BaseOffset+int64(r.OffsetDelta), 10),
		"CreateTime": strconv.FormatInt(b.FirstTimestamp+r.TimestampDelta, 10),
		"keySize":    strconv.Itoa(nullLen(r.Key)),
		"valueSize":  strconv.Itoa(nullLen(r.Value)),
		"sequence":   strconv.FormatInt(seq, 10),
		"headerKeys": "[" + strings.Join(keys, ",") + "]",
	}
	if b.Control() {
		m, err := ParseEndTxnMarker(*r)
		if err != nil {
			t.Fatalf("record %d of the batch at offset %d: %v", i, b.BaseOffset, err)
		}
		got["endTxnMarker"] = map[bool]string{true: "COMMIT", false: "ABORT"}[m.Commit]
		got["coordinatorEpoch"] = strconv.Itoa(int(m.CoordinatorEpoch))
	}
	for name, v := range got {
		if v != d[name] {
			t.Errorf("record %d of the batch at offset %d: %s = %s, DumpLogSegments read %s", i, b.BaseOffset, name, v, d[name])
		}
	}
}

func nullLen(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// TestEncodeMatchesJava builds each data batch from what the Java producer
// was given (sent.tsv) and the producer id, epoch and sequence Kafka read in
// it (dumplog.txt), and encodes it. Uncompressed, the bytes must be Java's,
// CRC included; compressed (codecs differ in their output), the decoded
// batch must be Java's decoded batch. The broker sets the base offset and
// the partition leader epoch, outside the CRC: they are taken from the dump.
func TestEncodeMatchesJava(t *testing.T) {
	dump, sent := loadDump(t), loadSent(t)
	for _, topic := range javaTopics {
		t.Run(topic, func(t *testing.T) {
			seg := readSegment(t, topic)
			msgs := sent[topic]
			for _, d := range dump[topic] {
				size := int(atoi(t, d.fields["size"]))
				javaBytes := seg[:size]
				seg = seg[size:]
				if d.fields["isControl"] == "true" {
					continue // written by the broker, not the producer
				}
				n := int(atoi(t, d.fields["count"]))
				built := buildFromDump(t, d, msgs[:n])
				msgs = msgs[n:]
				enc, err := Encode(&built)
				if err != nil {
					t.Fatal(err)
				}
				if built.Compression() == 0 {
					if !bytes.Equal(enc, javaBytes) {
						t.Errorf("batch at offset %s:\n ours %x\njava's %x", d.fields["baseOffset"], enc, javaBytes)
					}
					continue
				}
				ours, _, err := Decode(enc)
				if err != nil {
					t.Fatal(err)
				}
				java, _, err := Decode(javaBytes)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(ours, java) {
					t.Errorf("batch at offset %s: ours decodes to\n%+v\njava's to\n%+v", d.fields["baseOffset"], ours, java)
				}
			}
			if len(msgs) != 0 {
				t.Errorf("%d messages of sent.tsv are in no batch", len(msgs))
			}
		})
	}
}

func buildFromDump(t *testing.T, d dumpBatch, msgs []Message) Batch {
	t.Helper()
	var codec Compression
	if c := d.fields["compresscodec"]; c != "none" {
		if err := codec.UnmarshalText([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	p := Producer{
		ID:            atoi(t, d.fields["producerId"]),
		Epoch:         int16(atoi(t, d.fields["producerEpoch"])),
		BaseSequence:  int32(atoi(t, d.fields["baseSequence"])),
		Transactional: d.fields["isTransactional"] == "true",
	}
	b, err := Build(p, codec, msgs)
	if err != nil {
		t.Fatal(err)
	}
	b.BaseOffset = atoi(t, d.fields["baseOffset"])
	b.PartitionLeaderEpoch = int32(atoi(t, d.fields["partitionLeaderEpoch"]))
	return b
}
