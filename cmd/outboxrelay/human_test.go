package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/config"
	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

func TestPrintable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text, ünïcode ✓", "plain text, ünïcode ✓"},
		{"line one\n\tindented", "line one\n\tindented"},
		{"\x1b[2J\x1b[31mred\x1b]0;title\a", `\x1b[2J\x1b[31mred\x1b]0;title\a`},
		{"over\rwrite", `over\rwrite`},
		{"nul\x00 del\x7f", `nul\x00 del\x7f`},
		{"csi\u009b31m", `csi\u009b31m`},
		{"raw \x9b byte", `raw \x9b byte`},
	} {
		if got := printable(tc.in); got != tc.want {
			t.Errorf("printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Regression (issue 27, item 7): a server's error text with terminal
// escape sequences was printed raw in the final error line.
func TestExitCodeAndFinalLine(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		line string
	}{
		{nil, 0, ""},
		{errors.New("server: \x1b[2Jgone"), exitError, "outboxrelay: server: \\x1b[2Jgone\n"},
		{usageError{errors.New("c.json: slot.name: is empty")}, exitConfig, "outboxrelay: c.json: slot.name: is empty\n"},
	} {
		var stderr bytes.Buffer
		if code := exitCode(tc.err, &stderr); code != tc.code || stderr.String() != tc.line {
			t.Errorf("exitCode(%v) = %d, printed %q; want %d, %q", tc.err, code, stderr.String(), tc.code, tc.line)
		}
	}
}

// Regression (issue 27, item 10): run -h exited 2. -h and --help print
// the command's usage and exit 0, for every command.
func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"run", "-h"}, {"check", "--help"}, {"verify", "-h"}, {"sql", "-h"}} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, &stdout, &stderr)
		if code := exitCode(err, io.Discard); code != 0 || !strings.Contains(stderr.String(), "Usage of "+args[0]) {
			t.Errorf("%q: exit %d (%v), printed %q; want the usage and exit 0", args, code, err, stderr.String())
		}
	}
}

// humanWriter scrubs the secrets of the file and escapes what a terminal
// acts on: check's and verify's reports go through it.
func TestHumanWriter(t *testing.T) {
	cfg, err := config.Parse([]byte(`{"topic.prefix": "p", "database.hostname": "h", "database.user": "u", "database.dbname": "d",
		"plugin.name": "pgoutput", "table.include.list": "public.outbox", "database.password": "pw-in-report-1"}`), "c.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	red := config.NewRedactor()
	red.Set(cfg)
	var out bytes.Buffer
	fmt.Fprintf(humanWriter{w: &out, red: red}, "✗ PostgreSQL connection: server said \x1b[31mpw-in-report-1\x1b[0m\n\tfix it\n")
	if want := "✗ PostgreSQL connection: server said \\x1b[31m[redacted]\\x1b[0m\n\tfix it\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

// fakePostgres answers every connection with an ErrorResponse of code
// (57P03, "the database system is starting up", is retried) and message.
func fakePostgres(t *testing.T, code, message string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go answerError(c, code, message)
		}
	}()
	return ln.Addr().String()
}

func answerError(c net.Conn, code, message string) {
	defer c.Close()
	for {
		var n uint32
		if err := binary.Read(c, binary.BigEndian, &n); err != nil || n < 8 || n > 1<<16 {
			return
		}
		body := make([]byte, n-4)
		if _, err := io.ReadFull(c, body); err != nil {
			return
		}
		if n == 8 { // SSLRequest or GSSENCRequest: no
			c.Write([]byte{'N'})
			continue
		}
		fields := "SFATAL\x00C" + code + "\x00M" + message + "\x00\x00"
		msg := append([]byte{'E', 0, 0, 0, 0}, fields...)
		binary.BigEndian.PutUint32(msg[1:], uint32(4+len(fields)))
		c.Write(msg)
		return
	}
}

// Regression (issue 27, items 6 and 7): the retry WARN lines were not
// scrubbed, only the final error. A server whose error quotes the
// password and carries terminal escapes is retried, and no line of the
// relay's log shows either, in JSON or text.
func TestRetryLinesScrubbed(t *testing.T) {
	const secret = "pg-pass-in-error-9"
	addr := fakePostgres(t, "57P03", "starting up, password "+secret+" \x1b[2J\u009b31m")
	host, port, _ := net.SplitHostPort(addr)
	path := filepath.Join(t.TempDir(), "c.json")
	doc := fmt.Sprintf(`{"topic.prefix": "p", "database.hostname": %q, "database.port": %q, "database.user": "u", "database.dbname": "d",
		"plugin.name": "pgoutput", "table.include.list": "public.outbox", "database.password": %q,
		"transforms": "outbox", "transforms.outbox.type": "io.debezium.transforms.outbox.EventRouter"}`, host, port, secret)
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"json", "text"} {
		ctx, cancel := context.WithCancel(context.Background())
		stderr := &testbed.SyncBuffer{}
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, []string{"run", "--config", path, "--kafka-brokers", "127.0.0.1:1", "--log-format", format}, io.Discard, stderr)
		}()
		deadline := time.Now().Add(20 * time.Second)
		var err error
	wait:
		for !strings.Contains(stderr.String(), "retrying") && time.Now().Before(deadline) {
			select {
			case err = <-done:
				break wait
			case <-time.After(50 * time.Millisecond):
			}
		}
		cancel()
		if err == nil {
			err = <-done
		}
		log := stderr.String()
		if err != nil {
			log += "\n" + err.Error()
		}
		if !strings.Contains(log, "retrying") || !strings.Contains(log, "starting up, password [redacted]") {
			t.Errorf("%s: no scrubbed retry line in the log:\n%s", format, log)
		}
		if strings.Contains(log, secret) || strings.ContainsAny(log, "\x1b\u009b") {
			t.Errorf("%s: the password or a raw escape in the log:\n%q", format, log)
		}
	}
}
