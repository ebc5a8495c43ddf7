package postgres

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Regression (issue 27, item 5): database.sslrootcert=/dev/zero ran the
// process out of memory (pgx reads the file whole), and a FIFO blocked for
// ever. Each TLS file is refused at once, before pgx opens it, when it is
// not a regular file or larger than 1 MiB, the error naming the key and
// the file.
func TestTLSFilesBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.crt")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.crt")
	if err := os.WriteFile(big, make([]byte, maxPEMFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ key, path, want string }{
		{"database.sslrootcert", "/dev/zero", "a character device, not a regular file"},
		{"database.sslrootcert", fifo, "a FIFO, not a regular file"},
		{"database.sslrootcert", big, "has 1048577 bytes, more than the 1048576"},
		{"database.sslrootcert", dir, "a directory"},
		{"database.sslrootcert", filepath.Join(dir, "missing.crt"), "no such file"},
		{"database.sslcert", "/dev/zero", "a character device"},
		{"database.sslkey", fifo, "a FIFO"},
	} {
		m := baseConfig()
		m["database.sslmode"] = "verify-full"
		m[tc.key] = tc.path
		if tc.key != "database.sslrootcert" { // pgx wants both of the pair
			m["database.sslcert"], m["database.sslkey"] = tc.path, tc.path
		}
		cfg, err := ParseConfig(m)
		if err != nil {
			t.Fatal(err)
		}
		for name, open := range map[string]func() error{
			"ConnConfig":        func() error { _, err := cfg.ConnConfig(); return err },
			"ReplicationConfig": func() error { _, err := cfg.ReplicationConfig(); return err },
		} {
			done := make(chan error, 1)
			go func() { done <- open() }()
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("%s with %s=%s: still reading after 5 s", name, tc.key, tc.path)
			}
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			if !errors.Is(err, ErrConnSettings) || !strings.Contains(msg, tc.key+` "`+tc.path+`"`) || !strings.Contains(msg, tc.want) {
				t.Errorf("%s with %s=%s: %v; want a settings error naming the key, the file and %q", name, tc.key, tc.path, err, tc.want)
			}
		}
	}
}

// TestTLSFileSystemRoots: sslrootcert=system (libpq's name for the
// system's roots) names no file and is not checked as one.
func TestTLSFileSystemRoots(t *testing.T) {
	m := baseConfig()
	m["database.sslrootcert"], m["database.sslmode"] = "system", "verify-full"
	cfg, err := ParseConfig(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.checkTLSFiles(); err != nil {
		t.Errorf("system: %v", err)
	}
}

// Regression (issue 27, item 5): where database.sslrootcert,
// database.sslcert, database.sslkey or database.password is blank, pgx
// reads PGSSLROOTCERT, PGSSLCERT, PGSSLKEY or PGPASSFILE, else the file
// under the home directory; those are bounded too, named as what they
// stand for. A password file that is not there is skipped, as pgx does.
func TestFallbackFilesBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", dir)
	t.Setenv("PGPASSFILE", "")
	for _, tc := range []struct{ env, path, want string }{
		{"PGSSLROOTCERT", "/dev/zero", `PGSSLROOTCERT (for database.sslrootcert, which is blank) "/dev/zero" is a character device`},
		{"PGSSLKEY", fifo, `PGSSLKEY (for database.sslkey, which is blank) "` + fifo + `" is a FIFO`},
		{"PGPASSFILE", fifo, `PGPASSFILE (for database.password, which is blank) "` + fifo + `" is a FIFO`},
		{"PGPASSFILE", filepath.Join(dir, "missing"), ""},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(tc.env, tc.path)
			cfg, err := ParseConfig(baseConfig())
			if err != nil {
				t.Fatal(err)
			}
			err = cfg.checkTLSFiles()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("%s=%s: %v, want %q", tc.env, tc.path, err, tc.want)
			}
		})
	}
	if err := os.MkdirAll(filepath.Join(dir, ".postgresql"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, ".postgresql", "root.crt"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig(baseConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.checkTLSFiles(); err == nil || !strings.Contains(err.Error(), "~/.postgresql/root.crt (read for database.sslrootcert, which is blank)") || !strings.Contains(err.Error(), "a FIFO") {
		t.Errorf("~/.postgresql/root.crt a FIFO: %v", err)
	}
	if _, err := cfg.ConnConfig(); !errors.Is(err, ErrConnSettings) {
		t.Errorf("ConnConfig: %v, want the settings error", err)
	}
}
