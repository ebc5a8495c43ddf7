package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// A registry converter against JsonConverter: the same case runs through
// two outboxrelay processes in logical mode on one schema, the reference
// with the case's converters, the other with key.converter and
// value.converter set to a schema-registry converter (Avro or JSON
// Schema). The tested side's records are decoded by an independent
// implementation against the schemas fetched from the registry by id
// (Registry.Decode), and must then be the JSON the reference's converters
// give: its key and value as JsonConverter with schemas.enable=false would
// write them, record by record in each topic, partition and key; headers
// byte-equal.

// Registry is the schema registry of a converter run and the decoder of
// its records.
type Registry struct {
	URL string
	// Class is the converter's Kafka Connect class name.
	Class string
	// Decode replaces each record's key and value (Confluent's wire
	// format: magic byte 0, schema id, body) with the JSON they decode
	// to, a nil key or value staying nil. It is an implementation other
	// than outboxrelay's, reading the schemas from URL.
	Decode func(ctx context.Context, url string, recs []Record) ([]Record, error)
}

// ConverterComparable reports whether a case can run with a registry
// converter: cases that decode logical decoding messages cannot (their
// records have no Connect schema: outboxrelay refuses schemas there, as
// it refuses JsonConverter's).
func ConverterComparable(c *Case) bool { return !c.Messages() }

// converterPair is outboxrelay with the case's converters (the reference)
// against outboxrelay with a registry converter, on the same schema.
type converterPair struct {
	*caseRun
	ref, got *relayProc
	restarts int
}

func (p *converterPair) namespaces() (ref, got string) { return p.n.nsD, p.n.nsR }

// gotConfig is the case's config with both converters the registry's.
func (p *converterPair) gotConfig() map[string]any {
	cfg := withNamespace(p.base, p.n.slotR, p.n.nsR)
	for _, side := range []string{"key.converter", "value.converter"} {
		for k := range cfg {
			if strings.HasPrefix(k, side+".") {
				delete(cfg, k)
			}
		}
		cfg[side] = p.e.Registry.Class
		cfg[side+".schema.registry.url"] = p.e.Registry.URL
	}
	return cfg
}

func (p *converterPair) start(ctx context.Context) error {
	return p.startBoth(ctx, "")
}

func (p *converterPair) startBoth(ctx context.Context, tag string) error {
	ref, err := p.e.startRelay(p.c, p.n, withNamespace(p.base, p.n.slotD, p.n.nsD), "_json"+tag)
	if err != nil {
		return err
	}
	p.ref = ref
	got, err := p.e.startRelay(p.c, p.n, p.gotConfig(), "_registry"+tag)
	if err != nil {
		return err
	}
	p.got = got
	return p.e.waitStreaming(ctx, p.admin, []string{p.n.slotD, p.n.slotR}, p)
}

// restart waits until both sides have records records, stops both with
// SIGTERM and starts them again.
func (p *converterPair) restart(ctx context.Context, records int) error {
	ref, got, err := p.e.collect(ctx, p, records)
	if err != nil {
		return err
	}
	if len(ref) < records || len(got) < records {
		return fmt.Errorf("%s: before the restart, JsonConverter's side has %d records and the registry converter's %d; want %d each", p.c.ID, len(ref), len(got), records)
	}
	p.stop()
	p.restarts++
	return p.startBoth(ctx, fmt.Sprintf("-restart%d", p.restarts))
}

func (p *converterPair) failed(_ context.Context, refShort, gotShort bool) error {
	if refShort && p.ref != nil && p.ref.exited() {
		return fmt.Errorf("outboxrelay (JsonConverter) exited: %s", p.ref.tail())
	}
	if gotShort && p.got != nil && p.got.exited() {
		return fmt.Errorf("outboxrelay (%s) exited: %s", p.e.Registry.Class, p.got.tail())
	}
	return nil
}

func (p *converterPair) stop() {
	for _, r := range []*relayProc{p.got, p.ref} {
		if r != nil {
			r.stop()
		}
	}
}

// converters are the reference's key and value converters, as the
// connector file names them (outboxrelay's defaults: StringConverter for
// the key, JsonConverter for the value, schemas.enable as Connect's).
type converters struct{ key, value string }

func convertersOf(cfg map[string]any) converters {
	get := func(k, def string) string {
		if v, ok := cfg[k]; ok {
			return fmt.Sprint(v)
		}
		return def
	}
	return converters{
		key:   get("key.converter", "org.apache.kafka.connect.storage.StringConverter"),
		value: get("value.converter", "org.apache.kafka.connect.json.JsonConverter"),
	}
}

// asJSON is a reference record's key or value as the JSON a registry
// converter's decoded record must equal: a StringConverter's text as a
// JSON string, a JsonConverter envelope's payload, other JSON as it is.
func asJSON(b []byte, class string) ([]byte, error) {
	if b == nil {
		return nil, nil
	}
	if strings.HasSuffix(class, "StringConverter") {
		return json.Marshal(string(b))
	}
	var env struct {
		Schema  json.RawMessage `json:"schema"`
		Payload json.RawMessage `json:"payload"`
	}
	if json.Unmarshal(b, &env) == nil && env.Schema != nil && env.Payload != nil && len(b) > 0 && b[0] == '{' {
		return env.Payload, nil
	}
	if _, err := decode(b); err != nil {
		return nil, fmt.Errorf("the reference's %s record is not JSON: %w", class, err)
	}
	return b, nil
}

// CompareConverter checks the registry converter's decoded records against
// the reference's, key by key within each topic: in the same order, and
// all of one key in one partition. Partitions are not compared: Kafka
// partitions a record by its serialized key, and a registry converter's
// key bytes (magic byte, schema id, body) are not StringConverter's or
// JsonConverter's. In the Verdict, Debezium stands for the reference and
// Relay for the registry converter's side.
func CompareConverter(c *Case, conv converters, ref, got []Record) *Verdict {
	v := &Verdict{Case: c, Debezium: len(ref), Relay: len(got), DebeziumRecords: ref, RelayRecords: got}
	if len(ref) != c.Records {
		v.problem("JsonConverter's side wrote %d records, the case expects %d", len(ref), c.Records)
	}
	if len(got) != c.Records {
		v.problem("the registry converter's side wrote %d records, the case expects %d", len(got), c.Records)
	}
	refKeys, order, err := byTopicKey(ref, func(r Record) ([]byte, error) { return refKeyGroup(r.Key, conv.key) })
	if err != nil {
		v.problem("%v", err)
		return v
	}
	gotKeys, gotOrder, err := byTopicKey(got, func(r Record) ([]byte, error) { return gotKeyGroup(r.Key, conv.key) })
	if err != nil {
		v.problem("%v", err)
		return v
	}
	for _, k := range gotOrder {
		if _, ok := refKeys[k]; !ok {
			order = append(order, k)
		}
	}
	for _, k := range order {
		r, g := refKeys[k], gotKeys[k]
		at := fmt.Sprintf("%s key %s", k.topic, show([]byte(k.key)))
		if len(r) != len(g) {
			v.problem("%s: JsonConverter's side %d records, the registry converter's %d", at, len(r), len(g))
			continue
		}
		for i := range r {
			// Records JsonConverter's side put in one partition are in one
			// partition here, and the other way round (a partition
			// placement's choice is kept as it is).
			if (r[i].Partition == r[0].Partition) != (g[i].Partition == g[0].Partition) && r[i].Partition != g[i].Partition {
				v.problem("%s #%d: partition %d (the key's first in %d); JsonConverter's side %d (first in %d)", at, i+1, g[i].Partition, g[0].Partition, r[i].Partition, r[0].Partition)
			}
			compareConverted(v, fmt.Sprintf("%s #%d", at, i+1), conv, r[i], g[i])
		}
	}
	return v
}

type topicKey struct{ topic, key string }

// refKeyGroup and gotKeyGroup are what groups the two sides' records by
// key: a StringConverter key's text (an empty key reads back as nil), and
// the registry converter's key in the same form (a decoded string's
// content, another value's JSON text: an integer column's key is 42 there,
// "42" in StringConverter's text); JsonConverter keys as compacted JSON.
func refKeyGroup(key []byte, class string) ([]byte, error) {
	if strings.HasSuffix(class, "StringConverter") {
		return append([]byte{}, key...), nil
	}
	return compactJSON(asJSON(key, class))
}

func compactJSON(b []byte, err error) ([]byte, error) {
	if err != nil || b == nil {
		return b, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func gotKeyGroup(key []byte, class string) ([]byte, error) {
	if key == nil {
		return nil, nil
	}
	if !strings.HasSuffix(class, "StringConverter") {
		return compactJSON(key, nil)
	}
	var text string
	if json.Unmarshal(key, &text) == nil {
		return []byte(text), nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, key); err != nil {
		return nil, fmt.Errorf("the decoded key %s is not JSON: %w", show(key), err)
	}
	return buf.Bytes(), nil
}

// byTopicKey groups records by topic and key, the key as canon gives it,
// keeping first-seen order.
func byTopicKey(recs []Record, canon func(Record) ([]byte, error)) (map[topicKey][]Record, []topicKey, error) {
	m := map[topicKey][]Record{}
	var order []topicKey
	for _, r := range recs {
		k, err := canon(r)
		if err != nil {
			return nil, nil, fmt.Errorf("%s/%d offset %d: key: %w", r.Topic, r.Partition, r.Offset, err)
		}
		tk := topicKey{r.Topic, string(k)}
		if _, ok := m[tk]; !ok {
			order = append(order, tk)
		}
		m[tk] = append(m[tk], r)
	}
	return m, order, nil
}

func compareConverted(v *Verdict, where string, conv converters, r, g Record) {
	if !keyEqual(r.Key, g.Key, conv.key) {
		v.problem("%s: key: JsonConverter side %s, registry converter decoded %s", where, show(r.Key), show(g.Key))
	}
	want, err := asJSON(r.Value, conv.value)
	switch {
	case err != nil:
		v.problem("%s: value: %v", where, err)
	case want != nil && string(want) == "null" && g.Value == nil:
		v.observe("null-value")
	case (want == nil) != (g.Value == nil):
		v.problem("%s: value: JsonConverter %s, registry converter decoded %s", where, show(want), show(g.Value))
	case want != nil:
		if name, ok := convertedEqual(want, g.Value); !ok {
			v.problem("%s: value: JsonConverter %s, registry converter decoded %s", where, show(want), show(g.Value))
		} else if name != "" {
			v.observe(name)
		}
	}
	compareHeaders(v, where, r.Headers, g.Headers)
}

// keyEqual: a StringConverter key is the column's text, which a registry
// converter writes as the column's type (an integer key decodes to 42,
// not "42"); kafka-go reads a zero-length key as nil, a registry
// converter's empty string decodes to "".
func keyEqual(ref, got []byte, class string) bool {
	if !strings.HasSuffix(class, "StringConverter") {
		want, err := asJSON(ref, class)
		return err == nil && (want == nil) == (got == nil) && (want == nil || jsonEqual(want, got, numberNorm))
	}
	if ref == nil {
		return got == nil || string(got) == `""`
	}
	quoted, _ := json.Marshal(string(ref))
	if got != nil && jsonEqual(quoted, got, numberNorm) {
		return true
	}
	v, err := decode(ref)
	_, isString := v.(string)
	return err == nil && !isString && got != nil && jsonEqual(ref, got, numberNorm)
}

// convertedEqual compares a value as the registry converter decoded it
// with JsonConverter's, and names the documented difference it took.
func convertedEqual(want, got []byte) (string, bool) {
	if jsonEqual(want, got, numberNorm) || jsonEqual(want, got, float32Norm) {
		return "", true
	}
	if jsonEqual(want, got, inferenceNorm) {
		return "schema-inference", true
	}
	var text string
	if want[0] != '"' && json.Unmarshal(got, &text) == nil && jsonEqual(want, []byte(text), numberNorm) {
		return "payload-as-string", true
	}
	return "", false
}

// inferenceNorm is numberNorm with null members and empty arrays removed:
// what has no inferred Connect schema.
func inferenceNorm(v any, debezium bool) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if a, ok := e.([]any); e == nil || ok && len(a) == 0 {
				continue
			}
			out[k] = inferenceNorm(e, debezium)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = inferenceNorm(e, debezium)
		}
		return out
	}
	return numberNorm(v, debezium)
}

var errNoRegistry = errors.New("a converter run needs Env.Registry")
