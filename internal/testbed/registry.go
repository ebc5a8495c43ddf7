package testbed

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Registry is a running registryserver (the bed's schema registry:
// franz-go's srfake) of one test.
type Registry struct {
	URL     string // the Confluent REST API
	Control string // the fault and outage API (internal/testbed/registryserver)
	proc    *os.Process
}

// Hang stops the registry's process (SIGSTOP): the kernel still accepts
// connections to its port, and nothing answers them, the control API
// included. The returned function resumes it (SIGCONT); the test's
// cleanup resumes it too.
func (r Registry) Hang(t testing.TB) (resume func()) {
	t.Helper()
	if err := r.proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("stopping registryserver: %v", err)
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			if err := r.proc.Signal(syscall.SIGCONT); err != nil {
				t.Errorf("resuming registryserver: %v", err)
			}
		})
	}
	t.Cleanup(resume)
	return resume
}

// StartRegistry builds and starts internal/testbed/registryserver on
// 127.0.0.1 with args (e.g. "-basic", "u:p"); the test's cleanup stops it.
func StartRegistry(t testing.TB, args ...string) Registry {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(t.TempDir(), "registryserver")
	build := exec.Command("go", "build", "-o", bin, "./registryserver")
	build.Dir = filepath.Dir(file)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building registryserver: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting registryserver: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	r := Registry{proc: cmd.Process}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("registryserver exited before it was ready: %s", stderr.String())
			}
			if _, err := fmt.Sscanf(line, "registryserver: registry %s control %s", &r.URL, &r.Control); err == nil {
				continue
			}
			if strings.TrimSpace(line) == "registryserver: ready" && r.URL != "" {
				go func() {
					for range lines {
					}
				}()
				return r
			}
		case <-timeout:
			t.Fatalf("registryserver not ready in 30 s: %s", stderr.String())
		}
	}
}
