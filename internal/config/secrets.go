package config

import (
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
)

// redacted replaces a secret value wherever one would be shown.
const redacted = "[redacted]"

// collectSecrets gathers the resolved values of secret keys, and the
// password inside a JAAS config, which a client library may log on its own.
func (c *Config) collectSecrets() {
	seen := map[string]bool{}
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
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
			add(jaasOption(v, "password"))
		}
	}
	// Longest first, so that Scrub never leaves the tail of a secret that
	// contains a shorter one.
	sort.Slice(c.Secrets, func(i, j int) bool {
		if len(c.Secrets[i]) != len(c.Secrets[j]) {
			return len(c.Secrets[i]) > len(c.Secrets[j])
		}
		return c.Secrets[i] < c.Secrets[j]
	})
}

// jaasOption returns the value of option name in a JAAS config line such as
// `...ScramLoginModule required username="u" password="p";`, or "".
func jaasOption(jaas, name string) string {
	rest := jaas
	for {
		i := strings.Index(rest, name)
		if i < 0 {
			return ""
		}
		before := rest[:i]
		rest = strings.TrimLeft(rest[i+len(name):], " \t")
		if before != "" && !strings.ContainsAny(before[len(before)-1:], " \t\n") {
			continue // part of a longer word
		}
		if !strings.HasPrefix(rest, "=") {
			continue
		}
		rest = strings.TrimLeft(rest[1:], " \t")
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				return rest[1:]
			}
			return rest[1 : 1+end]
		}
		end := strings.IndexAny(rest, " \t;")
		if end < 0 {
			return rest
		}
		return rest[:end]
	}
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
	for _, secret := range c.Secrets {
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
