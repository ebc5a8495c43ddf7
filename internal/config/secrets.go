package config

import (
	"encoding/json"
	"errors"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// redacted replaces a secret value wherever one would be shown.
const redacted = "[redacted]"

// MinScrubLength is the shortest secret Scrub replaces by value. A
// shorter one occurs by chance in addresses, LSNs and numbers, so
// replacing it would mangle them and show where the secret's characters
// are (a one-character password "1" turned 127.0.0.1 into
// [redacted]27.0.0.[redacted]). Such a secret is still kept out of logs by
// key: a record's attribute named by a secret key, and the String and
// LogValue methods of the configuration types, never show it.
const MinScrubLength = 6

// collectSecrets gathers the resolved values of secret keys, and the
// password inside a JAAS config, which a client library may log on its
// own: the values Scrub replaces. It leaves out a value Scrub must not
// replace because replacing it would tell what it is: one shorter than
// MinScrubLength, or one that is part of a key or of a non-secret value
// of the file (a password equal to database.user turned "connecting as
// debezium" into "connecting as [redacted]", an oracle). Such a value
// shows where the key or value that holds it shows, and nowhere it would
// not show anyway.
//
// Parse's own errors are scrubbed of those too (errSecrets): they quote
// the refused value of a key, which is shown nowhere else, so a password
// written into another key by mistake ("snapshot.mode": "${env:PW}")
// reads [redacted] there and tells nothing.
func (c *Config) collectSecrets() {
	seen := map[string]bool{}
	add := func(s string) {
		if len(s) < MinScrubLength || seen[s] {
			return
		}
		seen[s] = true
		c.errSecrets = append(c.errSecrets, s)
		if !c.inPlainSight(s) {
			c.Secrets = append(c.Secrets, s)
		}
	}
	for k := range c.secretKeys {
		v, ok := c.all[k]
		if !ok {
			continue
		}
		add(v)
		if strings.HasSuffix(k, "sasl.jaas.config") {
			add(JAASOption(v, "password"))
		}
	}
	longestFirst(c.Secrets)
	longestFirst(c.errSecrets)
}

// longestFirst sorts secrets longest first, so that scrub never leaves
// the tail of a secret that contains a shorter one.
func longestFirst(secrets []string) {
	sort.Slice(secrets, func(i, j int) bool {
		if len(secrets[i]) != len(secrets[j]) {
			return len(secrets[i]) > len(secrets[j])
		}
		return secrets[i] < secrets[j]
	})
}

// inPlainSight reports whether secret is part of a key of the file or of
// the value of a key that is not secret.
func (c *Config) inPlainSight(secret string) bool {
	for k, v := range c.all {
		if strings.Contains(k, secret) || !c.secretKeys[k] && strings.Contains(v, secret) {
			return true
		}
	}
	return false
}

// JAASOption returns the value of option name in a JAAS config line such as
// `...ScramLoginModule required username="u" password="p";`, or "". It
// reads the line as sink's parseJAAS does, which is what authenticates:
// options are word=value pairs, a quoted value may hold \" and \\ escapes
// (a quote and a backslash), and the last of an option given twice wins;
// so the password on the scrub list is the one sent to the broker. A bare
// (unquoted) value, which sink refuses, is read up to a space or ;.
// It is exported so that sink can read the line with it: one parser.
func JAASOption(jaas, name string) string {
	option := regexp.MustCompile(`(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))`)
	value := ""
	for _, m := range option.FindAllStringSubmatch(jaas, -1) {
		if m[1] != name {
			continue
		}
		value = m[3]
		if m[3] == "" {
			value = strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(m[2])
		}
	}
	return value
}

// Redacted returns every key of the file (the top-level worker keys merged
// into config) with resolved values; secret values read "[redacted]" and
// secrets inside other values are scrubbed. It is what a log may print.
func (c *Config) Redacted() map[string]string {
	out := make(map[string]string, len(c.all))
	for k, v := range c.all {
		if c.secretKeys[k] {
			out[k] = redacted
			continue
		}
		out[k] = c.Scrub(v)
	}
	return out
}

// Scrub replaces every secret value in s with "[redacted]", also where the
// secret appears escaped as Go's %q or JSON would write it.
func (c *Config) Scrub(s string) string {
	return scrub(s, c.Secrets)
}

// scrub replaces every secret of secrets in s, in every spelling of
// secretForms.
func scrub(s string, secrets []string) string {
	for _, secret := range secrets {
		for _, form := range secretForms(secret) {
			s = strings.ReplaceAll(s, form, redacted)
		}
	}
	return s
}

// secretForms returns the secret and its escaped spellings inside quotes.
func secretForms(secret string) []string {
	forms := []string{secret}
	if q := strconv.Quote(secret); q[1:len(q)-1] != secret {
		forms = append(forms, q[1:len(q)-1])
	}
	if j, err := json.Marshal(secret); err == nil {
		if s := string(j[1 : len(j)-1]); s != secret && s != forms[len(forms)-1] {
			forms = append(forms, s)
		}
	}
	return forms
}

// SetDefaultBrokers settles Kafka's bootstrap.servers: the --kafka-brokers
// flag beats the file (top level, config, producer.* keys), which beats the
// KAFKA_BOOTSTRAP_SERVERS environment variable. With none of the three set
// it returns an error naming all three.
func (c *Config) SetDefaultBrokers(flag string, env func(string) (string, bool)) error {
	if flag = strings.TrimSpace(flag); flag != "" {
		c.setBrokers(flag)
		return nil
	}
	if strings.TrimSpace(c.Kafka["bootstrap.servers"]) != "" {
		return nil
	}
	if env != nil {
		if v, ok := env("KAFKA_BOOTSTRAP_SERVERS"); ok && strings.TrimSpace(v) != "" {
			c.setBrokers(strings.TrimSpace(v))
			return nil
		}
	}
	return errors.New("no Kafka brokers: pass --kafka-brokers host:port, set bootstrap.servers in " + c.sourceName() +
		" (top level or in config), or set the environment variable KAFKA_BOOTSTRAP_SERVERS")
}

func (c *Config) setBrokers(v string) {
	if c.Kafka == nil {
		c.Kafka = map[string]string{}
	}
	if c.all == nil {
		c.all = map[string]string{}
	}
	c.Kafka["bootstrap.servers"] = v
	c.all["bootstrap.servers"] = v
}

func (c *Config) sourceName() string {
	if c.source == "" {
		return "the connector config"
	}
	return c.source
}
