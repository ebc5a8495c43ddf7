package postgres

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func baseConfig() map[string]string {
	return map[string]string{
		"database.hostname": "127.0.0.1", "database.user": "u", "database.dbname": "d", "table.include.list": "public.outbox",
	}
}

// TestParseConfig: the connection keys' defaults and the errors that name
// the key (replication.TestParseConfig runs the same keys through the
// replication config that embeds this one).
func TestParseConfig(t *testing.T) {
	cases := []struct {
		name    string
		set     map[string]string
		wantErr string
		check   func(*testing.T, Config)
	}{
		{name: "defaults", check: func(t *testing.T, c Config) {
			if c.Port != 5432 || len(c.Ports) != 1 || c.SSLMode != "prefer" || c.Where() != "127.0.0.1:5432/d" || !c.Includes("public", "outbox") || c.Includes("public", "other") {
				t.Errorf("defaults: %+v", c)
			}
		}},
		{name: "bad port", set: map[string]string{"database.port": "x"}, wantErr: "database.port"},
		{name: "no table", set: map[string]string{"table.include.list": ""}, wantErr: "table.include.list is required"},
		{name: "bad table regex", set: map[string]string{"table.include.list": "public.(outbox"}, wantErr: "not a valid regular expression"},
		{name: "no user", set: map[string]string{"database.user": ""}, wantErr: "database.user is required"},
		{name: "bad sslmode", set: map[string]string{"database.sslmode": "sometimes"}, wantErr: "database.sslmode"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := baseConfig()
			for k, v := range c.set {
				m[k] = v
			}
			cfg, err := ParseConfig(m)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, cfg)
		})
	}
}

// TestConnSettingsNeverShowThePassword: the password is a field of the
// connection config, never part of a string a parse error could quote. A
// quote in it used to end pgx's masking early: "password=xxxxx tail'".
// A TLS file that cannot be read is a settings error, not retried.
func TestConnSettingsNeverShowThePassword(t *testing.T) {
	m := baseConfig()
	m["database.password"] = `s3cr'et tail-of-password\`
	m["database.sslmode"] = "verify-full"
	m["database.sslrootcert"] = "/nonexistent/ca.pem"
	cfg, err := ParseConfig(m)
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func() error{
		"ConnConfig":        func() error { _, err := cfg.ConnConfig(); return err },
		"ReplicationConfig": func() error { _, err := cfg.ReplicationConfig(); return err },
		"Connect":           func() error { _, err := cfg.Connect(context.Background()); return err },
	} {
		err := f()
		if err == nil {
			t.Fatalf("%s: no error for an unreadable database.sslrootcert", name)
		}
		if msg := err.Error(); strings.Contains(msg, "tail-of") || strings.Contains(msg, "s3cr") {
			t.Errorf("%s: the error shows the password: %s", name, msg)
		}
		if !strings.Contains(err.Error(), "database.sslrootcert") || Retryable(err) {
			t.Errorf("%s: %v (retryable %v); want a settings error naming database.sslrootcert, not retried", name, err, Retryable(err))
		}
	}

	m["database.sslmode"] = "disable"
	delete(m, "database.sslrootcert")
	cfg, err = ParseConfig(m)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := cfg.ConnConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cc.Password != m["database.password"] || cc.User != "u" || cc.Database != "d" || cc.RuntimeParams["application_name"] != "outboxrelay" {
		t.Errorf("ConnConfig: password %q user %q database %q params %v", cc.Password, cc.User, cc.Database, cc.RuntimeParams)
	}
	rc, err := cfg.ReplicationConfig()
	if err != nil || rc.Password != m["database.password"] || rc.RuntimeParams["replication"] != "database" {
		t.Errorf("ReplicationConfig: %v, password %q, params %v", err, rc.Password, rc.RuntimeParams)
	}
}

// TestSSLPassword: database.sslpassword decrypts an encrypted
// database.sslkey (legacy PEM encryption, as libpq reads); a wrong one is a
// settings error naming the key.
func TestSSLPassword(t *testing.T) {
	dir := t.TempDir()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "debezium"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 libpq's encrypted keys are this legacy format
	block, err := x509.EncryptPEMBlock(rand.Reader, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key), []byte("key-secret"), x509.PEMCipherAES256) //nolint:staticcheck
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath := filepath.Join(dir, "c.crt"), filepath.Join(dir, "c.key")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		password string
		ok       bool
	}{{"key-secret", true}, {"wrong", false}, {"", false}} {
		m := baseConfig()
		m["database.sslmode"] = "require"
		m["database.sslcert"], m["database.sslkey"], m["database.sslpassword"] = certPath, keyPath, c.password
		cfg, err := ParseConfig(m)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cfg.ConnConfig()
		if c.ok && err != nil {
			t.Errorf("database.sslpassword %q: %v", c.password, err)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error(), "database.sslpassword") || strings.Contains(err.Error(), "key-secret")) {
			t.Errorf("database.sslpassword %q: %v; want a settings error naming the key", c.password, err)
		}
	}
}

// TestPasswordFromEnvironment: with no database.password, libpq's
// PGPASSWORD (or ~/.pgpass) still applies, as it did when the password was
// left out of the connection string.
func TestPasswordFromEnvironment(t *testing.T) {
	t.Setenv("PGPASSWORD", "from-env")
	cfg, err := ParseConfig(baseConfig())
	if err != nil {
		t.Fatal(err)
	}
	cc, err := cfg.ConnConfig()
	if err != nil || cc.Password != "from-env" {
		t.Fatalf("ConnConfig: %v, password %q; want PGPASSWORD's", err, cc.Password)
	}
	rc, err := cfg.ReplicationConfig()
	if err != nil || rc.Password != "from-env" {
		t.Fatalf("ReplicationConfig: %v, password %q; want PGPASSWORD's", err, rc.Password)
	}
}

// TestHostList: database.hostname may list hosts, tried in order for a
// read-write server (the new primary after a failover); database.port
// gives one port for all or one per host.
func TestHostList(t *testing.T) {
	cases := []struct {
		host, port string
		want       []string // host:port of the primary config and its fallbacks
		wantErr    string
	}{
		{"db1", "", []string{"db1:5432"}, ""},
		{"db1,db2", "5433", []string{"db1:5433", "db2:5433"}, ""},
		{"db1, db2", "5432,5433", []string{"db1:5432", "db2:5433"}, ""},
		{"db1,db2", "5432,5433,5434", nil, "3 ports for 2 hosts"},
		{"db1", "x", nil, "database.port"},
	}
	for _, c := range cases {
		m := baseConfig()
		m["database.hostname"], m["database.port"] = c.host, c.port
		cfg, err := ParseConfig(m)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s %s: err %v, want it to mention %q", c.host, c.port, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s %s: %v", c.host, c.port, err)
		}
		for _, repl := range []bool{false, true} {
			var pc *pgconn.Config
			if repl {
				pc, err = cfg.ReplicationConfig()
			} else {
				var cc *pgx.ConnConfig
				cc, err = cfg.ConnConfig()
				if cc != nil {
					pc = &cc.Config
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			got := []string{fmt.Sprintf("%s:%d", pc.Host, pc.Port)}
			for _, f := range pc.Fallbacks {
				if f.TLSConfig == nil || pc.TLSConfig != nil { // sslmode=prefer adds a plaintext fallback per host
					got = append(got, fmt.Sprintf("%s:%d", f.Host, f.Port))
				}
			}
			got = dedupe(got)
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("%s %s (replication %v): hosts %v, want %v", c.host, c.port, repl, got, c.want)
			}
			if multi := len(c.want) > 1; multi != (pc.ValidateConnect != nil) {
				t.Errorf("%s (replication %v): read-write check set %v, want %v", c.host, repl, pc.ValidateConnect != nil, multi)
			}
		}
	}
}

func dedupe(s []string) []string {
	var out []string
	for _, v := range s {
		if len(out) == 0 || out[len(out)-1] != v {
			out = append(out, v)
		}
	}
	return out
}

// Regression (issue 27, item 6): Config printed its password through %v,
// %+v and slog.
func TestConfigPrintsNoPassword(t *testing.T) {
	c, err := ParseConfig(map[string]string{"database.hostname": "db1", "database.user": "u", "database.dbname": "d",
		"database.password": "pg-secret-1", "database.sslpassword": "key-secret-2", "table.include.list": "public.outbox"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("c", "cfg", c, "ptr", &c)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("c", "cfg", c)
	type outer struct{ Config }
	text := fmt.Sprintf("%v %+v %s %#v %v %+v", c, c, c, c, &c, outer{c}) + buf.String()
	for _, secret := range []string{"pg-secret-1", "key-secret-2"} {
		if strings.Contains(text, secret) {
			t.Errorf("a password shows:\n%s", text)
		}
	}
	if !strings.Contains(text, "db1:5432/d as u") || !strings.Contains(text, `"user":"u"`) {
		t.Errorf("the connection is not described:\n%s", text)
	}
}

// TestPrimary: database.primary.hostname and port make a configuration of
// the primary sharing every other setting; without the key there is none.
func TestPrimary(t *testing.T) {
	m := baseConfig()
	m["database.hostname"], m["database.port"], m["database.password"] = "standby", "5433", "pw"
	c, err := ParseConfig(m)
	if err != nil {
		t.Fatal(err)
	}
	if c.Primary() != nil {
		t.Fatalf("Primary() without database.primary.hostname: %+v; want nil", c.Primary())
	}
	m["database.primary.hostname"] = "primary"
	if c, err = ParseConfig(m); err != nil {
		t.Fatal(err)
	}
	p := c.Primary()
	if p == nil || p.Host != "primary" || p.Port != 5432 || len(p.Ports) != 1 || p.Ports[0] != 5432 || p.User != "u" || p.Password != "pw" || p.DBName != "d" || p.Primary() != nil {
		t.Fatalf("Primary() = %+v; want primary:5432 with the standby's user, password and database", p)
	}
	// i30 review findings 1 and 2: a former primary now in recovery was
	// written to, and a primary that drops packets held the stream for the
	// kernel's connect timeout; the standby's own connection stays as it
	// was.
	pc, err := p.ConnConfig()
	if err != nil {
		t.Fatal(err)
	}
	if dsn := p.dsn(false); !strings.Contains(dsn, "target_session_attrs='read-write'") || !strings.Contains(dsn, "connect_timeout='10'") ||
		pc.ValidateConnect == nil || pc.ConnectTimeout != 10*time.Second {
		t.Errorf("Primary(): %s, ConnectTimeout %s, ValidateConnect set %v; want target_session_attrs=read-write and connect_timeout=10",
			dsn, pc.ConnectTimeout, pc.ValidateConnect != nil)
	}
	if dsn := c.dsn(false); strings.Contains(dsn, "target_session_attrs") || strings.Contains(dsn, "connect_timeout") {
		t.Errorf("the standby's own connection: %s; want neither target_session_attrs nor connect_timeout", dsn)
	}
	m["database.primary.port"] = "6543"
	if c, err = ParseConfig(m); err != nil {
		t.Fatal(err)
	}
	if p := c.Primary(); p.Port != 6543 || c.Host != "standby" || c.Port != 5433 {
		t.Fatalf("Primary() port %d (the standby %s:%d); want 6543 (standby:5433)", p.Port, c.Host, c.Port)
	}
	m["database.primary.port"] = "0"
	if _, err := ParseConfig(m); err == nil || !strings.Contains(err.Error(), "database.primary.port") {
		t.Fatalf("database.primary.port=0: %v; want an error naming the key", err)
	}
}
