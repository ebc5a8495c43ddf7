package testbed

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Python returns the python of scripts/pyenv's venv (PyPI avro and
// jsonschema at pinned versions: the independent decoders of the
// schema-registry tests), making the venv when it is not there. Without it
// the test is skipped with the reason, or fails under
// OUTBOXRELAY_REQUIRE_SERVICES=1 (make test) and CI=true.
func Python(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("testbed: cannot find scripts/pyenv: no caller information")
	}
	script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "pyenv")
	out, err := exec.Command(script).Output()
	python := strings.TrimSpace(string(out))
	if err == nil && python != "" {
		return python
	}
	msg := "scripts/pyenv could not make the venv of the independent decoders (PyPI avro, jsonschema)"
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		msg += ": " + strings.TrimSpace(string(ee.Stderr))
	} else if err != nil {
		msg += ": " + err.Error()
	}
	if Required() || os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}
