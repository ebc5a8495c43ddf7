package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// loadQuickly runs Load and fails when it takes more than a few seconds,
// which is how a FIFO or /dev/zero showed before.
func loadQuickly(t *testing.T, path string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := Load(path, noEnv)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("Load(%s) still running after 5 s", path)
		return nil
	}
}

// Regression (issue 27, item 5): --config /dev/zero ran the process out of
// memory, --config naming a FIFO blocked for ever in open, and a file of
// any size was read whole.
func TestLoadRefusesSpecialAndLargeFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	large := filepath.Join(dir, "large.json")
	if err := os.WriteFile(large, []byte(minimal("")+strings.Repeat(" ", MaxConnectorFileSize)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{"/dev/zero", "/dev/zero: is not a regular file but a device; the connector file (--config) must be a regular file"},
		{fifo, fifo + ": is not a regular file but a named pipe (FIFO)"},
		{dir, dir + ": is not a regular file but a directory"},
		{large, large + ": is larger than 16777216 bytes (16 MiB)"},
		{filepath.Join(dir, "missing.json"), "missing.json: stat: no such file or directory"},
	} {
		err := loadQuickly(t, tc.path)
		if err == nil || !strings.HasPrefix(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%s): %v; want an error starting with the path and saying %q", tc.path, err, tc.want)
		}
	}
	// A file at the limit is read.
	ok := filepath.Join(dir, "ok.json")
	if err := os.WriteFile(ok, []byte(minimal("")+strings.Repeat(" ", MaxConnectorFileSize-len(minimal("")))), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := loadQuickly(t, ok); err != nil {
		t.Errorf("Load of a file of exactly %d bytes: %v", MaxConnectorFileSize, err)
	}
}

// Regression (issue 27, item 5): a ${file:} provider naming /dev/zero, a
// FIFO or a file larger than 1 MiB is refused at once, naming the file.
func TestFileProviderRefusesSpecialAndLargeFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "secrets.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	large := filepath.Join(dir, "large.properties")
	if err := os.WriteFile(large, []byte("pw=x\n"+strings.Repeat("#", MaxPropertiesFileSize)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{"/dev/zero", "/dev/zero: is not a regular file but a device; a ${file:} properties file must be a regular file"},
		{fifo, fifo + ": is not a regular file but a named pipe (FIFO)"},
		{large, large + ": is larger than 1048576 bytes (1 MiB)"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := Parse([]byte(minimal(`"database.password": "${file:`+tc.path+`:pw}"`)), "c.json", noEnv)
			done <- err
		}()
		select {
		case err := <-done:
			checkErr(t, err, "c.json: database.password: ${file:"+tc.path+":pw}: "+tc.want)
		case <-time.After(5 * time.Second):
			t.Fatalf("${file:%s:pw} still being read after 5 s", tc.path)
		}
	}
}
