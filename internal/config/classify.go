package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/outboxrelay/outboxrelay/internal/confkey"
	"github.com/outboxrelay/outboxrelay/internal/textlist"
)

// classify files every key of c.all into the section maps, warning once per
// key that is unknown or has no effect, and checking values against the
// table's accepted values.
func (c *Config) classify(keyErr func(key, format string, args ...any)) {
	table := keyTable()
	aliases := textlist.Split(c.all["transforms"])
	kafkaRank := map[string]int{} // stripped producer key → rank of the key that set it
	for _, k := range sortedKeys(c.all) {
		v := c.all[k]
		// Producer key prefixes, weakest first: Connect gives a source
		// connector's producer the worker's producer.* keys, then the
		// connector's producer.override.* keys on top.
		name, rank := k, 0
		for i, p := range []string{"producer.", "producer.override."} {
			if strings.HasPrefix(k, p) {
				name, rank = k[len(p):], i+1
			}
		}
		doc, ok := lookup(table, tableName(name, aliases))
		if rank > 0 && ok && doc.Origin != confkey.OriginProducer {
			ok = false // producer.database.password is no producer key
		}
		if doc.Secret || strings.Contains(strings.ToLower(name), "password") {
			c.secretKeys[k] = true
		}
		switch {
		case !ok && rank > 0:
			c.warnf("unknown key %q: ignored; %q is not a Kafka producer setting outboxrelay knows", k, name)
			continue
		case !ok:
			c.warnf("unknown key %q: ignored; Debezium's PostgreSQL connector does not define it either", k)
			continue
		case doc.NoEffect != "":
			c.warnf("key %q has no effect on outbox events: %s; ignored", k, doc.NoEffect)
			continue
		case strings.TrimSpace(v) == "" && (doc.Default != "" || doc.DefaultDoc != "") && doc.EmptyMeans == "":
			refuseEmpty(k, doc, keyErr)
			continue
		}
		if _, ok := doc.Match(v); len(doc.Values) > 0 && !ok {
			c.refuse(k, v, doc, keyErr)
			continue
		}
		if doc.Sections&confkey.SectionKafka != 0 {
			if prev, seen := kafkaRank[name]; !seen || rank >= prev {
				c.Kafka[name] = v
				kafkaRank[name] = rank
			}
		}
		if doc.Sections&confkey.SectionRouter != 0 {
			c.Router[k] = v
		}
		if doc.Sections&confkey.SectionPostgres != 0 {
			c.Postgres[k] = v
		}
		if doc.Sections&confkey.SectionRelay != 0 {
			c.Relay[k] = v
		}
	}
}

// refuse reports a value outside doc.Values, quoting it unless it is secret.
func (c *Config) refuse(key, value string, doc KeyDoc, keyErr func(key, format string, args ...any)) {
	shown := strconv.Quote(value)
	if c.secretKeys[key] {
		shown = "this value"
	}
	instead := doc.Instead
	if instead == "" {
		instead = "write one of " + strings.Join(doc.Values, ", ")
	}
	if len(doc.Values) == 1 && doc.Values[0] == "" {
		keyErr(key, "is not supported: %s", instead)
		return
	}
	keyErr(key, "%s is not supported: %s", shown, instead)
}

// refuseEmpty reports an explicitly empty value of a key that has a
// default. Kafka Connect never turns it into the default: an int, long or
// boolean key refuses it, a string keeps "" (and Debezium's validators
// then refuse most, such as slot.name), a list becomes empty. Reading it
// as the default, as an unset key, would silently mean something else
// than under Connect; so it is refused, naming the key.
func refuseEmpty(key string, doc KeyDoc, keyErr func(key, format string, args ...any)) {
	def := strconv.Quote(doc.Default)
	if doc.Default == "" {
		def = "(" + doc.DefaultDoc + ")"
	}
	keyErr(key, "is empty: remove the key to get its default %s, or write a value; an empty value is not the default in Kafka Connect either", def)
}

// validate checks the rules that span more than one value: required keys
// and tasks.max.
func (c *Config) validate(keyErr func(key, format string, args ...any)) {
	for _, doc := range keyTable() {
		if !doc.Required {
			continue
		}
		if strings.TrimSpace(c.all[doc.Key]) == "" {
			keyErr(doc.Key, "is missing: %s", doc.Instead)
		}
	}
	// One slot has one reader; Debezium's PostgreSQL connector also runs a
	// single task whatever tasks.max says, so more cannot be what the user
	// gets under Connect either.
	// tasks.max is read by its declaration: an integer, at least 1.
	n, err := confkey.Read(c.all).Int("tasks.max")
	switch {
	case err != nil:
		keyErr("tasks.max", "%s is not a positive integer; set tasks.max=1", strconv.Quote(c.all["tasks.max"]))
	case n > 1:
		keyErr("tasks.max", "%d tasks are not supported: one replication slot is read by one task, in Debezium too; set tasks.max=1", n)
	}
}

// tableName maps transforms.<alias>.<option> of a listed alias to the
// table's spelling, transforms.<alias>.<option>, so one entry documents
// every alias. Other keys are returned as they are.
func tableName(key string, aliases []string) string {
	for _, a := range aliases {
		if opt, ok := strings.CutPrefix(key, "transforms."+a+"."); ok {
			return "transforms.<alias>." + opt
		}
	}
	return key
}

// String describes the configuration for a log line: its name and how many
// keys each section got. It holds no values.
func (c *Config) String() string {
	return fmt.Sprintf("connector %q from %s: %d router, %d postgres, %d kafka, %d relay keys, %d warnings",
		c.Name, c.source, len(c.Router), len(c.Postgres), len(c.Kafka), len(c.Relay), len(c.Warnings))
}
