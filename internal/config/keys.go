package config

import "github.com/outboxrelay/outboxrelay/internal/confkey"

// KeyDoc declares one configuration key; the table is internal/confkey's,
// the one place keys are declared.
type KeyDoc = confkey.KeyDoc

// Keys returns the table of known keys (confkey.Keys).
func Keys() []KeyDoc {
	return confkey.Keys()
}

func keyTable() []KeyDoc { return confkey.Keys() }

func lookup(table []KeyDoc, key string) (KeyDoc, bool) { return confkey.Lookup(table, key) }
