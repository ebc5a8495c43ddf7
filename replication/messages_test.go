package replication

import (
	"errors"
	"strings"
	"testing"
)

// TestMessagesNeedPostgreSQL14: a configuration that routes logical
// decoding messages stops at start on PostgreSQL 13, naming the version,
// since pgoutput sends messages from 14 on; a lone EventRouter does not care.
func TestMessagesNeedPostgreSQL14(t *testing.T) {
	cfg := &Config{User: "debezium", Messages: true}
	find := func(s Settings) *Finding {
		for _, f := range s.Findings(cfg) {
			if f.Name == "logical decoding messages" {
				return &f
			}
		}
		return nil
	}
	f := find(Settings{VersionNum: 130018, Version: "13.18", WALLevel: "logical", Replication: true})
	if f == nil || f.OK || !errors.Is(f.Err, ErrServerVersion) || !strings.Contains(f.Err.Error(), "13.18") || !strings.Contains(f.Err.Error(), "PostgreSQL 14") {
		t.Fatalf("PostgreSQL 13: finding %+v", f)
	}
	if f := find(Settings{VersionNum: 140013, Version: "14.13", WALLevel: "logical", Replication: true}); f == nil || !f.OK {
		t.Fatalf("PostgreSQL 14: finding %+v", f)
	}
	cfg.Messages = false
	if f := find(Settings{VersionNum: 130018}); f != nil {
		t.Fatalf("without messages: finding %+v", f)
	}
}

func TestIncludesMessage(t *testing.T) {
	c := Config{Messages: true, MessageIncludeText: `orders,pay.*`}
	if err := c.parsePrefixLists(); err != nil {
		t.Fatal(err)
	}
	for prefix, want := range map[string]bool{"orders": true, "ORDERS": true, "orders2": false, "payments": true, "xpay": false} {
		if got := c.IncludesMessage(prefix); got != want {
			t.Errorf("include %q: %v, want %v", prefix, got, want)
		}
	}
	c = Config{Messages: true, MessageExcludeText: `skip.*`}
	if err := c.parsePrefixLists(); err != nil {
		t.Fatal(err)
	}
	if c.IncludesMessage("skip-me") || !c.IncludesMessage("keep") {
		t.Error("exclude list not applied")
	}
	c.Messages = false
	if c.IncludesMessage("keep") {
		t.Error("messages off: a prefix included")
	}
	both := Config{MessageIncludeText: "a", MessageExcludeText: "b"}
	if err := both.parsePrefixLists(); err == nil {
		t.Error("both lists: no error")
	}
	bad := Config{MessageIncludeText: "(?=x)"}
	if err := bad.parsePrefixLists(); err == nil {
		t.Error("look-ahead: no error")
	}
}
