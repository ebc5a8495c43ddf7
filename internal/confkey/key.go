// Package confkey declares every configuration key outboxrelay knows, once:
// its type, default, range, origin and one line of doc (keyTable). The
// parsers of every component read their keys through these declarations
// (Values), so the default applied and the range checked are the declared
// ones; internal/config classifies a connector file by the same table, and
// the key reference in the docs is generated from it (Markdown).
//
// The package imports nothing of the module, so that router, which may
// import nothing else, reads through it too.
package confkey

import (
	"math"
	"strings"
	"time"
)

// Section names a part of the relay that reads a key. A key may feed several
// sections (topic.prefix names context headers and heartbeat topics).
type Section uint8

const (
	SectionRouter   Section = 1 << iota // config.Config.Router
	SectionPostgres                     // config.Config.Postgres
	SectionKafka                        // config.Config.Kafka
	SectionRelay                        // config.Config.Relay
)

// String lists the sections, for generated docs: "router+postgres".
func (s Section) String() string {
	var parts []string
	for _, n := range []struct {
		s    Section
		name string
	}{{SectionRouter, "router"}, {SectionPostgres, "postgres"}, {SectionKafka, "kafka"}, {SectionRelay, "relay"}} {
		if s&n.s != 0 {
			parts = append(parts, n.name)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

// Where a key comes from; the docs group keys by it.
const (
	OriginDebezium    = "Debezium PostgreSQL connector"
	OriginEventRouter = "Debezium Outbox EventRouter"
	OriginConnect     = "Kafka Connect"
	OriginProducer    = "Kafka producer" // also accepted as producer.<key> and producer.override.<key>
	OriginOutboxrelay = "outboxrelay"    // keys of outboxrelay's own, with no Debezium or Kafka equivalent
)

// Origins lists the origins in the order the docs show them.
func Origins() []string {
	return []string{OriginConnect, OriginEventRouter, OriginDebezium, OriginOutboxrelay, OriginProducer}
}

// Kind is the type of a key's value.
type Kind uint8

const (
	// KindText is any text: a name, a column, a topic, a file, a regex.
	// Entries with Values are enums or class names (see Type).
	KindText   Kind = iota
	KindBool        // true or false, any case
	KindInt         // a Java int: Min to Max, Max at most 2^31-1
	KindLong        // a Java long: Min to Max
	KindMillis      // milliseconds, read as a time.Duration: Min to Max, Max at most 9223372036854
	KindList        // comma-separated values
	KindEnum        // one of Values, any case (set by Type from Values)
	KindClass       // one of Values, a Java class name, exact (set by Type)
)

// String names the kind for the docs.
func (k Kind) String() string {
	return [...]string{"text", "boolean", "int", "long", "milliseconds", "list", "enum", "class"}[k]
}

// largest is the largest value a numeric kind holds: Java's int and long,
// and the milliseconds a time.Duration holds.
func (k Kind) largest() int64 {
	switch k {
	case KindInt:
		return math.MaxInt32
	case KindMillis:
		return math.MaxInt64 / int64(time.Millisecond)
	}
	return math.MaxInt64
}

// KeyDoc declares one configuration key outboxrelay knows.
type KeyDoc struct {
	// Key is the key as written in the connector JSON. A trailing ".*"
	// matches every key with that prefix that has no entry of its own;
	// "<alias>" stands for a transform alias listed in transforms.
	Key      string
	Sections Section // maps that receive the key; 0: read by internal/config only, or no effect
	Kind     Kind    // the value's type; KindText with Values is an enum or class (Type)
	// Default is the value applied when the key is unset, as one would
	// write it; "" when there is none or it depends on other keys, which
	// DefaultDoc then describes.
	Default    string
	DefaultDoc string
	// Min and Max bound a numeric kind's value, inclusive. Max 0 means
	// the kind's largest (Java's int or long; for milliseconds, what a
	// time.Duration holds).
	Min, Max int64
	Unit     string // of a number, in messages: "rows", "bytes"; default by kind
	Origin   string // one of the Origin constants
	Doc      string // one line: what outboxrelay does with it
	Secret   bool   // the value is a password or key: redacted and scrubbed
	Required bool   // config.Parse fails when the key is missing
	// Values lists the accepted values; empty means any, and {""} refuses
	// every non-empty value. Enum values match case-insensitively as in
	// Kafka's and Debezium's ConfigDefs; Java class names (values with a
	// dot) match exactly.
	Values []string
	// Instead says what to write when the value is not in Values or a
	// required key is missing.
	Instead string
	// NoEffect, when set, marks a key Debezium or Kafka knows but that
	// changes nothing in outboxrelay; it is why, and the key gets a warning.
	NoEffect string
	// EmptyMeans, when set, says what an explicitly empty value of a key
	// with a default means (Kafka's ssl.endpoint.identification.algorithm:
	// "" turns the check off). Without it internal/config refuses an empty
	// value of a key with a default, which Kafka Connect never turns into
	// the default either.
	EmptyMeans string
}

// Type is the key's kind, telling enums and class names from text by
// Values.
func (d KeyDoc) Type() Kind {
	if d.Kind != KindText || len(d.Values) == 0 || len(d.Values) == 1 && d.Values[0] == "" {
		return d.Kind
	}
	if strings.Contains(d.Values[0], ".") {
		return KindClass
	}
	return KindEnum
}

// Numeric reports whether the key's value is a number.
func (d KeyDoc) Numeric() bool {
	return d.Kind == KindInt || d.Kind == KindLong || d.Kind == KindMillis
}

// Range returns the bounds of a numeric key, inclusive.
func (d KeyDoc) Range() (lo, hi int64) {
	hi = d.Max
	if hi == 0 || hi > d.Kind.largest() {
		hi = d.Kind.largest()
	}
	return d.Min, hi
}

// Keys returns the table of known keys, sorted as written (grouped by
// origin). Each call builds a fresh copy, so callers may keep or change it.
func Keys() []KeyDoc {
	return keyTable()
}

// Declared returns the entry of table declaring name itself (no
// wildcard entry).
func Declared(table []KeyDoc, name string) (KeyDoc, bool) {
	for _, d := range table {
		if d.Key == name {
			return d, true
		}
	}
	return KeyDoc{}, false
}

// Lookup returns the table entry for key: the exact entry, else the entry
// whose ".*" prefix is the longest that matches.
func Lookup(table []KeyDoc, key string) (KeyDoc, bool) {
	best, found := -1, false
	var doc KeyDoc
	for _, d := range table {
		if d.Key == key {
			return d, true
		}
		prefix, ok := strings.CutSuffix(d.Key, "*")
		if ok && strings.HasPrefix(key, prefix) && len(prefix) > best {
			best, doc, found = len(prefix), d, true
		}
	}
	return doc, found
}
