package replication

import (
	"errors"
	"strings"
	"testing"

	"github.com/outboxrelay/outboxrelay/postgres"
)

// TestMessagesNeedPostgreSQL14: a configuration that routes logical
// decoding messages stops at start on PostgreSQL 13, naming the version,
// since pgoutput sends messages from 14 on; a lone EventRouter does not care.
func TestMessagesNeedPostgreSQL14(t *testing.T) {
	cfg := &Config{Config: postgres.Config{User: "debezium"}, Messages: true}
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

// Regression: review-16 finding 5. With messages on, a table.include.list
// that matched no table was accepted, so a typo in a mixed connector (rows
// and messages) started a relay that never routed a row; messages only is
// now said with outbox.messages.only, and then no table may match.
func TestCheckIncluded(t *testing.T) {
	for _, tc := range []struct {
		name          string
		cfg           Config
		tables        []string
		want, wantNot string
	}{
		{"tables", Config{}, []string{"public.outbox"}, "", ""},
		{"mixed", Config{Messages: true}, []string{"public.outbox"}, "", ""},
		{"no table", Config{Config: postgres.Config{TablesText: "public.outbx"}}, nil, "no table", "outbox.messages.only"},
		{"messages, no table", Config{Messages: true, Config: postgres.Config{TablesText: "public.outbx"}}, nil, "set outbox.messages.only=true", ""},
		{"messages only", Config{Messages: true, MessagesOnly: true}, nil, "", ""},
		{"messages only, a table", Config{Messages: true, MessagesOnly: true, Config: postgres.Config{TablesText: "public.outbox"}}, []string{"public.outbox"}, "matches public.outbox", ""},
	} {
		err := checkIncluded(&tc.cfg, tc.tables)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err %v, want one containing %q", tc.name, err, tc.want)
		case tc.wantNot != "" && strings.Contains(err.Error(), tc.wantNot):
			t.Errorf("%s: err %v mentions %q", tc.name, err, tc.wantNot)
		}
	}
	if _, err := ParseConfig(map[string]string{"outbox.messages.only": "maybe"}); err == nil || !strings.Contains(err.Error(), "outbox.messages.only") {
		t.Errorf("a bad boolean: %v", err)
	}
}

// Regression: review-16 finding 12. startReplication dropped messages
// 'true' below PostgreSQL 14 without a word; and the argument list is
// pinned: messages are asked for only when they are routed.
func TestPluginArgs(t *testing.T) {
	cfg := &Config{Publication: "pub'1", Slot: "s"}
	args, err := pluginArgs(cfg, 130018)
	if err != nil || strings.Join(args, ", ") != `proto_version '1', publication_names '"pub''1"'` {
		t.Errorf("no messages: %q, %v", args, err)
	}
	cfg.Messages = true
	if args, err = pluginArgs(cfg, 140000); err != nil || args[len(args)-1] != "messages 'true'" || len(args) != 3 {
		t.Errorf("messages on 14: %q, %v", args, err)
	}
	if _, err = pluginArgs(cfg, 130018); !errors.Is(err, ErrServerVersion) || !strings.Contains(err.Error(), "130018") {
		t.Errorf("messages on 13: err %v, want ErrServerVersion naming the version", err)
	}
}

// Regression (issue 27, item 8): publication_names went bare while CREATE
// PUBLICATION quoted the name; pgoutput folds a bare name to lower case, so
// a mixed-case publication did not match the one created.
func TestPluginArgsQuotesPublication(t *testing.T) {
	for _, tc := range []struct{ pub, want string }{
		{"dbz_publication", `publication_names 'dbz_publication'`},
		{"OrdersPub", `publication_names '"OrdersPub"'`},
		{"order", `publication_names '"order"'`},
		{"a,b", `publication_names '"a,b"'`},
		{`we"ird`, `publication_names '"we""ird"'`},
	} {
		args, err := pluginArgs(&Config{Publication: tc.pub, Slot: "s"}, 160000)
		if err != nil || args[1] != tc.want {
			t.Errorf("publication %q: %q, %v; want %s", tc.pub, args, err, tc.want)
		}
	}
}
