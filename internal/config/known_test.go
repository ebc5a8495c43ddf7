package config_test

import (
	"strings"
	"testing"

	"github.com/outboxrelay/outboxrelay/internal/config"
	"github.com/outboxrelay/outboxrelay/sink"
)

// TestEveryReadKeyHasItsOwnEntry: a key a component reads must have an
// entry of its own, so that the wildcard entries can warn about every other
// key of their namespace (a misspelt database.sslmode must not pass
// silently).
func TestEveryReadKeyHasItsOwnEntry(t *testing.T) {
	table := config.KeyTable()
	for _, k := range sink.KnownKeys() {
		doc, ok := config.Lookup(table, k)
		if !ok || doc.Key != k {
			t.Errorf("sink reads %q, which has no entry of its own (matched %q)", k, doc.Key)
		}
	}
	// The wildcards whose keys a component reads by prefix, checking them
	// itself. Every other wildcard with Sections would pass a misspelt key
	// on silently, so it must have a NoEffect reason instead.
	wildcardRead := map[string]bool{
		"transforms.*":             true, // the router refuses options it does not know
		"topic.creation.default.*": true, // topic configs for the topics the relay creates
	}
	for _, d := range table {
		if strings.HasSuffix(d.Key, ".*") && d.Sections != 0 && d.NoEffect == "" && !wildcardRead[d.Key] {
			t.Errorf("wildcard %q passes unknown keys to %s silently; give it a NoEffect reason or list it in wildcardRead", d.Key, d.Sections)
		}
	}
}
