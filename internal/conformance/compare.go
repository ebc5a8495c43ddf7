package conformance

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Record is one Kafka record as read back, its topic without the side's
// namespace prefix.
type Record struct {
	Topic     string
	Partition int
	Offset    int64
	Key       []byte // nil: null key
	Headers   []Header
	Value     []byte // nil: null value (tombstone)
}

// Header is one record header; a nil Value is a null header.
type Header struct {
	Key   string
	Value []byte
}

// Difference is a documented way outboxrelay's records may differ from
// Debezium's, with the rule that makes them equal again.
type Difference struct {
	Doc string // what differs, and where docs/compatibility.md or docs/configuration.md says so
	// Implicit differences apply to every case that does not opt out; they
	// come from the connector JSON's defaults, not from the case.
	Implicit bool
}

// Differences are the documented differences a case may name.
var Differences = map[string]Difference{
	"extended-headers": {Implicit: true, Doc: "Debezium 3.2.1+ adds `__debezium.context.*` headers " +
		"(extended.headers.enabled, Connect default true); outboxrelay's default is false " +
		"(docs/configuration.md, Converter and connector keys). Debezium's context headers are left out of the comparison " +
		"unless the case sets extended.headers.enabled=true."},
	"run-id": {Doc: "with extended.headers.enabled=true, `__debezium.context.runId` is a random UUID per start " +
		"on both sides; its value is not compared, its place and form are."},
	"json-expansion": {Doc: "table.expand.json.payload=true: Debezium rebuilds the payload with Jackson " +
		"(numbers as doubles, nulls and empty arrays dropped, some shapes sent unexpanded), outboxrelay keeps PostgreSQL's " +
		"text (spec section 3; docs/compatibility.md, JSON expansion). Compared as JSON with numbers as doubles, " +
		"null members and empty arrays removed, and Debezium's string fallback parsed."},
	"float-text": {Doc: "real/double precision keep PostgreSQL's shortest text (`100`), Java writes `100.0` " +
		"(docs/compatibility.md, The record). Compared as numbers: as doubles, or for `real` as the float32 both texts denote " +
		"(PostgreSQL prints 1.5e10::real as `1.5000001e+10`, Java as `1.50000005E10`)."},
	"unicode-escapes": {Doc: "characters beyond the Basic Multilingual Plane (emoji) in JSON values: Debezium's " +
		"JsonConverter (Jackson) writes them as UTF-16 surrogate escapes (`\\uD83D\\uDE42`), outboxrelay as UTF-8, " +
		"as PostgreSQL stores them (docs/compatibility.md, JSON expansion). Compared as bytes after decoding Debezium's " +
		"surrogate escapes."},
	"restart-resend": {Doc: "after a restart, Debezium 3.7.1 may send again the whole transaction whose last event " +
		"was a transactional logical decoding message (debezium/dbz#2004: its WalPositionLocator takes the recorded MESSAGE " +
		"position for a non-transactional message's and resumes from the first LSN the walsender sends, which is before " +
		"that transaction when the slot was not yet flushed past it); outboxrelay sends nothing twice (docs/migrating-from-debezium.md). " +
		"Debezium's records with the `id`, key and value of an earlier record of their partition are " +
		"counted and left out; outboxrelay must write exactly the case's records."},
	"missing-envelope-null": {Doc: "table.field.additional.missing=ignore with an envelope placement: for an event " +
		"that lacks the placement's field, Debezium 3.7.1 writes `\"<alias>\":null` or leaves the field out depending on " +
		"the first event with the same payload schema since its start (EventRouterDelegate caches the value schema by " +
		"payload schema); outboxrelay always leaves it out (docs/configuration.md, EventRouter options: table.field.additional.missing). " +
		"Compared with Debezium's top-level null members that outboxrelay's value lacks removed."},
	"schema-inference": {Doc: "a registry converter (ConverterAgainstJSON): an expanded payload's null members and " +
		"empty arrays have no Connect schema (Debezium's JsonSchemaData infers none), so the registry converter's record lacks them, " +
		"as Debezium's does with AvroConverter; JsonConverter without schemas writes them (docs/converters.md). Compared with " +
		"null members and empty arrays removed."},
	"null-value": {Doc: "a registry converter (ConverterAgainstJSON): a NULL payload with tombstones off. JsonConverter " +
		"writes the JSON null of the optional schema (`null`); Confluent's serializers write a null value for a null object " +
		"(AbstractKafkaAvroSerializer.serializeImpl), so the registry converter's record has a null value (docs/converters.md)."},
	"payload-as-string": {Doc: "a registry converter (ConverterAgainstJSON): a payload whose schema cannot be " +
		"inferred (a JSON null, an array of mixed types, an integer beyond int64) is sent as its JSON text in a string, as " +
		"Debezium's EventRouter does with a schema-aware converter; JsonConverter without schemas writes the JSON itself " +
		"(docs/converters.md). Compared after parsing the string."},
	"decimal-precise": {Doc: "decimal.handling.mode=precise: Debezium writes Base64 of the unscaled value, " +
		"outboxrelay the decimal text (docs/configuration.md, Converter and connector keys: decimal.handling.mode). Compared as unscaled integers."},
}

func differenceNames() []string {
	var out []string
	for k := range Differences {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Verdict is the outcome of one case.
type Verdict struct {
	Case     *Case
	Debezium int // records read
	Relay    int
	Observed []string // documented differences that were needed
	Problems []string // undocumented differences, with evidence
	Err      error    // the case could not run
	// What each side wrote, as read back (Debezium's before its context
	// headers were set aside).
	DebeziumRecords, RelayRecords []Record
}

// Passed reports whether the case ran and showed only documented differences.
func (v *Verdict) Passed() bool { return v.Err == nil && len(v.Problems) == 0 }

// Summary is the report's verdict column.
func (v *Verdict) Summary() string {
	switch {
	case v.Err != nil:
		return "ERROR"
	case len(v.Problems) > 0:
		return "FAIL"
	case len(v.Observed) == 0:
		return "byte-equal"
	default:
		return "equal with documented difference"
	}
}

func (v *Verdict) observe(d string) {
	for _, x := range v.Observed {
		if x == d {
			return
		}
	}
	v.Observed = append(v.Observed, d)
}

func (v *Verdict) problem(format string, args ...any) {
	v.Problems = append(v.Problems, fmt.Sprintf(format, args...))
}

// extendedHeaders reports whether the case's config turns Debezium's
// context headers on for both sides.
func extendedHeaders(c *Case) bool {
	for _, o := range c.Config {
		if o.Key == "extended.headers.enabled" && !o.Delete && strings.EqualFold(o.Value, "true") {
			return true
		}
	}
	return false
}

const contextHeaderPrefix = "__debezium.context."

// Compare checks Debezium's records (dbz) against outboxrelay's (rly).
func Compare(c *Case, dbz, rly []Record) *Verdict {
	v := &Verdict{Case: c, Debezium: len(dbz), Relay: len(rly)}
	v.DebeziumRecords = make([]Record, len(dbz))
	copy(v.DebeziumRecords, dbz)
	v.RelayRecords = rly
	if c.Allows("restart-resend") {
		dbz = v.dropResent(dbz)
	}
	if len(dbz) != c.Records {
		v.problem("Debezium wrote %d records, the case expects %d", len(dbz), c.Records)
	}
	if len(rly) != c.Records {
		v.problem("outboxrelay wrote %d records, the case expects %d", len(rly), c.Records)
	}
	if !extendedHeaders(c) {
		for i := range dbz {
			kept := dbz[i].Headers[:0:0]
			for _, h := range dbz[i].Headers {
				if strings.HasPrefix(h.Key, contextHeaderPrefix) {
					v.observe("extended-headers")
					continue
				}
				kept = append(kept, h)
			}
			dbz[i].Headers = kept
		}
	}
	dg, rg := group(dbz), group(rly)
	for _, tp := range unionKeys(dg, rg) {
		d, r := dg[tp], rg[tp]
		if len(d) != len(r) {
			v.problem("%s: Debezium %d records, outboxrelay %d", tp, len(d), len(r))
		}
		for i := 0; i < len(d) && i < len(r); i++ {
			compareRecord(v, fmt.Sprintf("%s offset %d", tp, i), d[i], r[i])
		}
	}
	return v
}

// dropResent returns recs without the records that repeat an earlier
// record of their partition (id header, key and value), observing
// restart-resend when there are any.
func (v *Verdict) dropResent(recs []Record) []Record {
	type sent struct {
		tp             topicPartition
		id, key, value string
	}
	seen := map[sent]bool{}
	var out []Record
	recs = append([]Record(nil), recs...)
	sort.SliceStable(recs, func(i, j int) bool {
		a, b := recs[i], recs[j]
		if a.Topic != b.Topic || a.Partition != b.Partition {
			return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
		}
		return a.Offset < b.Offset
	})
	for _, r := range recs {
		k := sent{topicPartition{r.Topic, r.Partition}, "", string(r.Key), string(r.Value)}
		for _, h := range r.Headers {
			if h.Key == "id" {
				k.id = string(h.Value)
			}
		}
		if seen[k] {
			v.observe("restart-resend")
			continue
		}
		seen[k] = true
		out = append(out, r)
	}
	return out
}

type topicPartition struct {
	topic     string
	partition int
}

func (tp topicPartition) String() string { return fmt.Sprintf("%s/%d", tp.topic, tp.partition) }

func group(recs []Record) map[topicPartition][]Record {
	out := map[topicPartition][]Record{}
	for _, r := range recs {
		tp := topicPartition{r.Topic, r.Partition}
		out[tp] = append(out[tp], r)
	}
	for _, rs := range out {
		sort.Slice(rs, func(i, j int) bool { return rs[i].Offset < rs[j].Offset })
	}
	return out
}

func unionKeys(a, b map[topicPartition][]Record) []topicPartition {
	seen := map[topicPartition]bool{}
	var out []topicPartition
	for _, m := range []map[topicPartition][]Record{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].topic != out[j].topic {
			return out[i].topic < out[j].topic
		}
		return out[i].partition < out[j].partition
	})
	return out
}

func compareRecord(v *Verdict, where string, d, r Record) {
	c := v.Case
	if !bytes.Equal(d.Key, r.Key) || (d.Key == nil) != (r.Key == nil) {
		if name, ok := equalUnder(c, d.Key, r.Key); ok {
			v.observe(name)
		} else {
			v.problem("%s: key: Debezium %s, outboxrelay %s", where, show(d.Key), show(r.Key))
		}
	}
	compareHeaders(v, where, d.Headers, r.Headers)
	if bytes.Equal(d.Value, r.Value) && (d.Value == nil) == (r.Value == nil) {
		return
	}
	if d.Value != nil && r.Value != nil {
		if name, ok := equalUnder(c, d.Value, r.Value); ok {
			v.observe(name)
			return
		}
	}
	v.problem("%s: value: Debezium %s, outboxrelay %s", where, show(d.Value), show(r.Value))
}

func compareHeaders(v *Verdict, where string, d, r []Header) {
	if len(d) != len(r) {
		v.problem("%s: headers: Debezium %s, outboxrelay %s", where, showHeaders(d), showHeaders(r))
		return
	}
	for i := range d {
		if d[i].Key != r[i].Key {
			v.problem("%s: headers: Debezium %s, outboxrelay %s", where, showHeaders(d), showHeaders(r))
			return
		}
		if bytes.Equal(d[i].Value, r[i].Value) && (d[i].Value == nil) == (r[i].Value == nil) {
			continue
		}
		if d[i].Key == contextHeaderPrefix+"runId" && v.Case.Allows("run-id") && isUUID(d[i].Value) && isUUID(r[i].Value) {
			v.observe("run-id")
			continue
		}
		if name, ok := equalUnder(v.Case, d[i].Value, r[i].Value); ok {
			v.observe(name)
			continue
		}
		v.problem("%s: header %s: Debezium %s, outboxrelay %s", where, d[i].Key, show(d[i].Value), show(r[i].Value))
	}
}

func isUUID(b []byte) bool {
	if len(b) != 36 {
		return false
	}
	for i, ch := range b {
		switch i {
		case 8, 13, 18, 23:
			if ch != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdef", rune(ch)) {
				return false
			}
		}
	}
	return true
}

// equalUnder tries the case's named differences in turn and returns the
// first under which d (Debezium) and r (outboxrelay) are equal.
func equalUnder(c *Case, d, r []byte) (string, bool) {
	if d == nil || r == nil {
		return "", false
	}
	for _, name := range c.Differences {
		var ok bool
		switch name {
		case "json-expansion":
			ok = jsonEqual(d, r, expansionNorm)
		case "float-text":
			// real is a float4: both texts must name the same float32.
			ok = jsonEqual(d, r, numberNorm) || jsonEqual(d, r, float32Norm) || numbersEqual(string(d), string(r))
		case "decimal-precise":
			ok = jsonEqual(d, r, decimalNorm)
		case "unicode-escapes":
			ok = bytes.Equal(decodeSurrogateEscapes(d), r)
		case "missing-envelope-null":
			ok = missingNullEqual(d, r)
		}
		if ok {
			return name, true
		}
	}
	return "", false
}

type normalizer func(v any, debezium bool) any

// missingNullEqual: d and r are JSON objects equal once d's null members
// that r lacks are removed, and d had at least one.
func missingNullEqual(d, r []byte) bool {
	dv, err1 := decode(d)
	rv, err2 := decode(r)
	dm, ok1 := dv.(map[string]any)
	rm, ok2 := rv.(map[string]any)
	if err1 != nil || err2 != nil || !ok1 || !ok2 {
		return false
	}
	removed := false
	for k, v := range dm {
		if _, in := rm[k]; !in && v == nil {
			delete(dm, k)
			removed = true
		}
	}
	return removed && reflect.DeepEqual(dm, rm)
}

func jsonEqual(d, r []byte, norm normalizer) bool {
	dv, err1 := decode(d)
	rv, err2 := decode(r)
	if err1 != nil || err2 != nil {
		return false
	}
	return reflect.DeepEqual(norm(dv, true), norm(rv, false))
}

func decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data")
	}
	return v, nil
}

// walk rebuilds a decoded JSON value, applying leaf to every scalar.
func walk(v any, leaf func(any) any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = walk(e, leaf)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = walk(e, leaf)
		}
		return out
	}
	return leaf(v)
}

// numberNorm turns every number into a float64 (Jackson's double).
func numberNorm(v any, _ bool) any {
	return walk(v, func(v any) any {
		if n, ok := v.(json.Number); ok {
			if f, err := strconv.ParseFloat(string(n), 64); err == nil {
				return f
			}
			return string(n)
		}
		return v
	})
}

// float32Norm turns every number into the float32 it denotes.
func float32Norm(v any, _ bool) any {
	return walk(v, func(v any) any {
		if n, ok := v.(json.Number); ok {
			if f, err := strconv.ParseFloat(string(n), 32); err == nil {
				return float32(f)
			}
			return string(n)
		}
		return v
	})
}

// expansionNorm is numberNorm plus what Jackson's rebuild drops (null
// members, empty arrays) and Debezium's fallback to the unexpanded string.
func expansionNorm(v any, debezium bool) any {
	if s, ok := v.(string); ok && debezium {
		if inner, err := decode([]byte(s)); err == nil {
			if _, isStr := inner.(string); !isStr {
				v = inner
			}
		}
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if e == nil {
				continue
			}
			if a, ok := e.([]any); ok && len(a) == 0 {
				continue
			}
			out[k] = expansionNorm(e, debezium)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = expansionNorm(e, debezium)
		}
		return out
	}
	return numberNorm(v, debezium)
}

// decimalNorm turns Debezium's Base64 unscaled decimals and outboxrelay's
// decimal strings into the unscaled integer's digits.
func decimalNorm(v any, debezium bool) any {
	return walk(v, func(v any) any {
		x, ok := v.(string)
		if !ok {
			return v
		}
		if debezium {
			if b, err := base64.StdEncoding.DecodeString(x); err == nil && len(b) > 0 {
				n := new(big.Int).SetBytes(b)
				if b[0]&0x80 != 0 { // two's complement
					n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
				}
				return "unscaled:" + n.String()
			}
			return x
		}
		if _, err := strconv.ParseFloat(x, 64); err == nil {
			if n, ok := new(big.Int).SetString(strings.Replace(x, ".", "", 1), 10); ok {
				return "unscaled:" + n.String()
			}
		}
		return x
	})
}

func numbersEqual(a, b string) bool {
	for _, bits := range []int{64, 32} {
		x, err1 := strconv.ParseFloat(a, bits)
		y, err2 := strconv.ParseFloat(b, bits)
		if err1 == nil && err2 == nil && x == y {
			return true
		}
	}
	return false
}

// Dump prints records one a line: topic/partition, headers, key, value.
func Dump(recs []Record) string {
	sorted := append([]Record(nil), recs...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Topic != sorted[j].Topic {
			return sorted[i].Topic < sorted[j].Topic
		}
		if sorted[i].Partition != sorted[j].Partition {
			return sorted[i].Partition < sorted[j].Partition
		}
		return sorted[i].Offset < sorted[j].Offset
	})
	var b strings.Builder
	for _, r := range sorted {
		fmt.Fprintf(&b, "%s/%d %s key=%s value=%s\n", r.Topic, r.Partition, showHeaders(r.Headers), show(r.Key), show(r.Value))
	}
	return b.String()
}

// show quotes bytes for the report, cut to a readable length.
func show(b []byte) string {
	if b == nil {
		return "null"
	}
	const max = 240
	if len(b) > max {
		return fmt.Sprintf("%q…(%d bytes)", b[:max], len(b))
	}
	return fmt.Sprintf("%q", b)
}

func showHeaders(hs []Header) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = h.Key + "=" + show(h.Value)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// decodeSurrogateEscapes rewrites JSON escapes of UTF-16 surrogate pairs
// (\uD83D\uDE42) as the UTF-8 of the character they encode, leaving every
// other escape as it is.
func decodeSurrogateEscapes(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+12 <= len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
			hi, err1 := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
			lo, err2 := strconv.ParseUint(string(b[i+8:i+12]), 16, 16)
			if err1 == nil && err2 == nil && hi >= 0xD800 && hi < 0xDC00 && lo >= 0xDC00 && lo < 0xE000 {
				out = utf8.AppendRune(out, utf16.DecodeRune(rune(hi), rune(lo)))
				i += 11
				continue
			}
		}
		out = append(out, b[i], b[i+1]) // any other escape, kept whole
		i++
	}
	return out
}
