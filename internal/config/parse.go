package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Config is a loaded connector configuration split by the part of the relay
// that reads it. Every value is a string, as Kafka Connect sees it, with
// config providers already resolved.
type Config struct {
	Name string // connector name: the top-level "name", else config's "name"; "" when neither is set

	// Router holds transforms, transforms.*, the key/value/header converters
	// and their options, extended.headers.enabled, decimal.handling.mode and
	// topic.prefix, under their connector names.
	Router map[string]string
	// Postgres holds database.*, plugin.name, slot.*, publication.*,
	// table.include.list, snapshot.mode, heartbeat.*, status.update.interval.ms,
	// skipped.operations, topic.prefix and errors.* (not the dead-letter keys).
	Postgres map[string]string
	// Kafka holds the producer keys (bootstrap.servers, linger.ms, acks,
	// security.protocol, sasl.*, ssl.*, ...) with any producer. or
	// producer.override. prefix stripped — producer.override.X beats
	// producer.X beats X — plus topic.creation.default.* and
	// errors.deadletterqueue.*.
	Kafka map[string]string
	// Relay holds the keys about the relay's own failure handling:
	// errors.tolerance, errors.max.retries, retriable.restart.connector.wait.ms
	// and the other errors.* keys.
	Relay map[string]string

	// Warnings has one line per key that is unknown, ignored or
	// overridden, the first MaxWarnings of them; MoreWarnings counts the
	// rest, so that a file of a million unknown keys prints one summary,
	// not a million lines.
	Warnings     []string
	MoreWarnings int
	// Secrets are the resolved secret values (passwords, private keys, the
	// password inside sasl.jaas.config), so that logs and errors can be
	// scrubbed of them. Longest first.
	Secrets []string

	errSecrets []string          // Secrets and those in plain sight, for Parse's errors (collectSecrets)
	all        map[string]string // every key as in the file (merged), resolved
	secretKeys map[string]bool   // keys of all whose value is secret
	source     string            // file name, for error messages
}

// KeyError reports one key whose value outboxrelay cannot run with. Reason
// says what is wrong and what to write instead; it never holds a secret.
type KeyError struct {
	Source string // the config file, or what Parse was told
	Key    string // the connector key, e.g. plugin.name
	Reason string
}

func (e *KeyError) Error() string {
	return e.Source + ": " + e.Key + ": " + e.Reason
}

// Load reads a connector file: either {"name": ..., "config": {...}} as
// registered with Kafka Connect, or the bare config map. See Parse.
func Load(path string, env func(string) (string, bool)) (*Config, error) {
	// Every error of Load starts with the path, as KeyError does.
	data, err := ReadFile(path, MaxConnectorFileSize, "the connector file (--config)")
	if err != nil {
		return nil, err
	}
	return Parse(data, path, env)
}

// Parse reads a connector configuration from data; source names it in
// errors. env looks up environment variables for ${env:NAME} (nil: an
// empty environment).
//
// JSON scalars become strings as Kafka Connect's REST API turns them into
// strings (true → "true", 1 → "1", number text kept as written); null,
// arrays and objects are errors naming the key. In the wrapped form, Kafka
// worker keys (bootstrap.servers, security.protocol, producer.*, sasl.*,
// ssl.*) may also sit at the top level; config wins on conflict, with a
// warning.
//
// All problems are reported at once, joined, each a *KeyError where a key is
// at fault. When only validation failed, the returned Config is non-nil so
// that the caller can still print its Warnings; it must not be run.
func Parse(data []byte, source string, env func(string) (string, bool)) (*Config, error) {
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	c := &Config{
		Router:     map[string]string{},
		Postgres:   map[string]string{},
		Kafka:      map[string]string{},
		Relay:      map[string]string{},
		all:        map[string]string{},
		secretKeys: map[string]bool{},
		source:     source,
	}
	var errs []error
	keyErr := func(key, format string, args ...any) {
		errs = append(errs, &KeyError{Source: source, Key: key, Reason: fmt.Sprintf(format, args...)})
	}

	data, err := prepare(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	raw, err := c.readDocument(data, keyErr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	resolver := newResolver(env)
	for _, k := range sortedKeys(raw) {
		v, err := resolver.resolve(raw[k])
		if err != nil {
			keyErr(k, "%v", err)
			continue
		}
		c.all[k] = v
	}
	c.classify(keyErr)
	c.collectSecrets()
	c.validate(keyErr)
	if len(errs) > 0 {
		return c, c.scrubErrors(errs)
	}
	return c, nil
}

// member is one key of a JSON object, in file order.
type member struct {
	key string
	raw json.RawMessage
}

// readDocument decodes the file into a flat key → string map: the config
// object merged with the top-level worker keys. Scalar problems are
// reported through keyErr; a malformed document is returned as an error.
func (c *Config) readDocument(data []byte, keyErr func(key, format string, args ...any)) (map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	top, err := readObject(dec)
	if err != nil {
		return nil, fmt.Errorf("reading connector JSON: %w", jsonError(data, dec, err))
	}
	if _, err := dec.Token(); err != io.EOF {
		line, col := position(data, dec.InputOffset())
		return nil, fmt.Errorf("reading connector JSON: line %d, column %d: unexpected data after the top-level object; the file must hold one JSON object", line, col)
	}
	var configRaw json.RawMessage
	for _, m := range top {
		if m.key == "config" {
			configRaw = m.raw
		}
	}
	if configRaw == nil {
		// The bare map: every member is a connector key.
		out := c.scalars(top, "the top-level object", keyErr)
		c.Name = out["name"]
		return out, nil
	}

	inner, err := readObject(json.NewDecoder(bytes.NewReader(configRaw)))
	if err != nil {
		return nil, fmt.Errorf(`reading "config": %w; it must be a JSON object of connector keys`, err)
	}
	out := c.scalars(inner, "config", keyErr)
	worker := map[string]json.RawMessage{}
	for _, m := range top {
		switch {
		case m.key == "config":
		case m.key == "name":
			var name string
			if err := json.Unmarshal(m.raw, &name); err != nil {
				keyErr("name", "the top-level name must be a JSON string")
				continue
			}
			c.Name = name
		case m.key == "tasks" || m.key == "type":
			c.warnf("top-level key %q: ignored; Kafka Connect's REST API writes it, it is not configuration", m.key)
		case isWorkerKey(m.key):
			worker[m.key] = m.raw
		default:
			c.warnf("unknown top-level key %q: ignored; only name, config and Kafka worker keys (bootstrap.servers, security.protocol, producer.*, sasl.*, ssl.*) may sit there", m.key)
		}
	}
	if inName, ok := out["name"]; ok && c.Name != "" && inName != c.Name {
		// Kafka Connect refuses this registration too.
		keyErr("name", "config's name %q differs from the top-level name %q; make them equal or drop config.name", inName, c.Name)
	} else if c.Name == "" {
		c.Name = inName
	}
	workerValues := c.scalars(toMembers(worker), "the top-level object", keyErr)
	for _, k := range sortedKeys(workerValues) {
		if v, ok := out[k]; ok {
			if v != workerValues[k] {
				c.warnf("key %q is set both at the top level and in config: the value in config is used", k)
			}
			continue
		}
		out[k] = workerValues[k]
	}
	return out, nil
}

// readObject reads one JSON object member by member, keeping file order.
func readObject(dec *json.Decoder) ([]member, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errors.New("object key is not a string")
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		out = append(out, member{key: key, raw: raw})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	return out, nil
}

func toMembers(m map[string]json.RawMessage) []member {
	out := make([]member, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, member{key: k, raw: m[k]})
	}
	return out
}

// scalars turns members into strings as Kafka Connect would see them. A
// duplicate key keeps its last value, as Jackson does in Connect's REST API,
// with a warning because the first value was probably meant to go.
func (c *Config) scalars(members []member, place string, keyErr func(key, format string, args ...any)) map[string]string {
	out := make(map[string]string, len(members))
	seen := map[string]bool{}
	for _, m := range members {
		if seen[m.key] {
			c.warnf("key %q appears more than once in %s: the last value is used, as Kafka Connect does", m.key, place)
		}
		seen[m.key] = true
		v, reason := scalar(m.raw)
		if reason != "" {
			delete(out, m.key)
			keyErr(m.key, "%s", reason)
			continue
		}
		out[m.key] = v
	}
	return out
}

// scalar returns the string Kafka Connect makes of a JSON value, or why it
// makes none. The reason never quotes the value: it may be a secret.
func scalar(raw json.RawMessage) (string, string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", "has no value; write a JSON string"
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", "is not a valid JSON string"
		}
		return s, ""
	case 't', 'f':
		// Jackson prints booleans as true/false.
		return string(raw), ""
	case 'n':
		return "", "is null; Kafka Connect needs a value: write a string, or remove the key to get its default"
	case '[':
		return "", "is a JSON array; write the list as one comma-separated string, e.g. \"a,b\""
	case '{':
		return "", "is a JSON object; connector values are strings: flatten it into dotted keys"
	}
	// A number: keep its text as written, as Jackson's text coercion does
	// for integers ("1"); unlike Java, 1.50 stays "1.50".
	return string(raw), ""
}

// isWorkerKey reports whether a top-level key is one of the Kafka worker
// keys that may sit next to name and config.
func isWorkerKey(k string) bool {
	switch k {
	case "bootstrap.servers", "security.protocol":
		return true
	}
	for _, p := range []string{"producer.", "sasl.", "ssl."} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// MaxWarnings is how many warnings a Config keeps (Warnings).
const MaxWarnings = 100

func (c *Config) warnf(format string, args ...any) {
	if len(c.Warnings) >= MaxWarnings {
		c.MoreWarnings++
		return
	}
	c.Warnings = append(c.Warnings, fmt.Sprintf(format, args...))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// scrubErrors joins errs after removing any secret value from their text:
// a second line of defence, since no message is meant to quote a secret.
func (c *Config) scrubErrors(errs []error) error {
	for i, err := range errs {
		msg := err.Error()
		if s := scrub(msg, c.errSecrets); s != msg {
			errs[i] = errors.New(s)
		}
	}
	return errors.Join(errs...)
}
