package main

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestCommandFlags: the flags run, check and verify share, parsed once for
// all three.
func TestCommandFlags(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		err    string // "" for none
		config string
		prefix string
	}{
		{name: "check", args: nil, err: "check: --config is required, e.g. outboxrelay check --config connector.json"},
		{name: "verify", args: []string{"--shadow"}, err: "verify: --config is required"},
		{name: "run", args: []string{"--config", "c.json"}, config: "c.json"},
		{name: "run", args: []string{"--config", "c.json", "--shadow-prefix", "x."}, config: "c.json"},
		{name: "check", args: []string{"--config", "c.json", "--shadow"}, config: "c.json", prefix: "shadow."},
		{name: "verify", args: []string{"--config=c.json", "--shadow", "--shadow-prefix", "dbz-shadow."}, config: "c.json", prefix: "dbz-shadow."},
		{name: "run", args: []string{"--config", "c.json", "--unknown"}, err: "flag provided but not defined: -unknown"},
	} {
		flags := newCommandFlags(tc.name, io.Discard)
		err := flags.parse(tc.args)
		if tc.err != "" {
			var ue usageError
			if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %q: error %v, want a usage error saying %q", tc.name, tc.args, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %q: %v", tc.name, tc.args, err)
			continue
		}
		if *flags.config != tc.config || flags.prefix() != tc.prefix {
			t.Errorf("%s %q: config %q, shadow prefix %q; want %q, %q", tc.name, tc.args, *flags.config, flags.prefix(), tc.config, tc.prefix)
		}
	}
}
