package postgres

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// Regression (issue 27, item 7): a weakened PostgreSQL verification
// (database.sslmode below verify-full, database.sslrootcert with a mode
// that does not verify it) logged nothing. Weaknesses names each, with the
// key and the fix; verify-full, and sslrootcert=system (verify-full in
// libpq and pgx), have none.
func TestWeaknesses(t *testing.T) {
	for _, tc := range []struct {
		mode, rootCert, requireAuth string
		want                        []string // keys, in order
		detail                      string   // in the first detail
	}{
		{"disable", "", "", []string{"database.sslmode"}, "no TLS"},
		{"allow", "", "", []string{"database.sslmode"}, "no certificate is verified"},
		{"prefer", "", "", []string{"database.sslmode"}, "no certificate is verified"},
		{"require", "", "", []string{"database.sslmode"}, "self-signed"},
		{"require", "/ca.crt", "", []string{"database.sslmode"}, "as verify-ca"},
		{"verify-ca", "/ca.crt", "", []string{"database.sslmode"}, "not that it names database.hostname"},
		{"verify-full", "/ca.crt", "", nil, ""},
		{"verify-full", "", "", nil, ""},
		{"prefer", "/ca.crt", "", []string{"database.sslmode", "database.sslrootcert"}, ""},
		{"disable", "/ca.crt", "", []string{"database.sslmode", "database.sslrootcert"}, ""},
		{"prefer", "system", "", nil, ""},
		{"require", "", "scram-sha-256,none,md5", []string{"database.sslmode", "database.require_auth"}, ""},
		{"prefer", "", "!gss", []string{"database.sslmode", "database.require_auth"}, ""},
		{"verify-full", "/ca.crt", "password", nil, ""},
	} {
		m := baseConfig()
		m["database.sslmode"], m["database.sslrootcert"], m["database.require_auth"] = tc.mode, tc.rootCert, tc.requireAuth
		cfg, err := ParseConfig(m)
		if err != nil {
			t.Fatal(err)
		}
		ws := cfg.Weaknesses()
		var keys []string
		for _, w := range ws {
			keys = append(keys, w.Key)
			if !strings.Contains(w.Detail, w.Key) || !strings.Contains(w.Fix, "verify-full") && !strings.Contains(w.Fix, "database.require_auth") {
				t.Errorf("%s/%s: %+v: the detail names no key, or the fix no setting", tc.mode, tc.rootCert, w)
			}
		}
		if strings.Join(keys, " ") != strings.Join(tc.want, " ") {
			t.Errorf("sslmode %s, sslrootcert %q, require_auth %q: keys %v, want %v", tc.mode, tc.rootCert, tc.requireAuth, keys, tc.want)
		}
		if tc.detail != "" && (len(ws) == 0 || !strings.Contains(ws[0].Detail, tc.detail)) {
			t.Errorf("sslmode %s: %+v, want a detail with %q", tc.mode, ws, tc.detail)
		}
	}
}

// TestWarnWeaknesses: one WARN a weakness, naming the key and the fix;
// nothing at verify-full.
func TestWarnWeaknesses(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	cfg, err := ParseConfig(baseConfig()) // the default, prefer
	if err != nil {
		t.Fatal(err)
	}
	WarnWeaknesses(log, &cfg)
	out := buf.String()
	if strings.Count(out, "level=WARN") != 1 || !strings.Contains(out, "key=database.sslmode") || !strings.Contains(out, "verify-full") {
		t.Errorf("prefer: %q", out)
	}
	buf.Reset()
	cfg.SSLMode, cfg.SSLRootCert = "verify-full", "/ca.crt"
	WarnWeaknesses(log, &cfg)
	if buf.Len() != 0 {
		t.Errorf("verify-full: %q", buf.String())
	}
}
