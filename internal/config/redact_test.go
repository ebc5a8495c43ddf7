package config

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// Regression (issue 27, item 6): secrets were scrubbed by value without
// regard to what else the value is. A password equal to database.user
// printed "connecting as [redacted]" (telling it), and a one-character
// password turned 127.0.0.1 into [redacted]27.0.0.[redacted].
func TestScrubNoOracle(t *testing.T) {
	for _, tc := range []struct {
		name, extra, in, want string
	}{
		{"password equal to the user", `"database.user": "debezium", "database.password": "debezium"`,
			"connecting to h:5432/d as debezium", "connecting to h:5432/d as debezium"},
		{"password part of the host", `"database.hostname": "db-prod-1.example", "database.password": "prod-1"`,
			"dial db-prod-1.example: refused", "dial db-prod-1.example: refused"},
		{"one-character password", `"database.hostname": "127.0.0.1", "database.password": "1"`,
			"dial 127.0.0.1:5432", "dial 127.0.0.1:5432"},
		{"five characters", `"database.password": "12345"`, "LSN 0/12345AB", "LSN 0/12345AB"},
		{"a long password is scrubbed", `"database.password": "debezium@123"`,
			"server said password debezium@123 is wrong", "server said password [redacted] is wrong"},
	} {
		c, err := Parse([]byte(minimal(tc.extra)), "c.json", noEnv)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := c.Scrub(tc.in); got != tc.want {
			t.Errorf("%s: Scrub(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

type secretHolder struct{ Password string }

// Regression (issue 27, item 6): the retry WARN lines and every other log
// line were not scrubbed, only the final error. Every logger of the
// binary is made with Redactor.Handler: secret values are replaced in the
// message and in every attribute (strings, errors, Stringers, any value,
// groups, With), and an attribute named by a secret key is replaced
// whatever its value.
func TestRedactHandler(t *testing.T) {
	c, err := Parse([]byte(minimal(`"database.password": "debezium@123", "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"kafka-pw-77\";"`)), "c.json", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"json", "text"} {
		var buf bytes.Buffer
		red := NewRedactor()
		var h slog.Handler = slog.NewJSONHandler(&buf, nil)
		if format == "text" {
			h = slog.NewTextHandler(&buf, nil)
		}
		log := slog.New(red.Handler(h))
		log.Warn("before Set", "password", "abc", "database.password", "short")
		red.Set(c)
		log = log.With("component", "x", "dsn", "password=debezium@123")
		log.Warn("relay: session failed, retrying",
			"err", fmt.Errorf("connecting: server said %q", "debezium@123"),
			"attempt", 3)
		log.Info("message with debezium@123 in it",
			slog.Group("g", "jaas", "password=\"kafka-pw-77\""),
			"any", secretHolder{Password: "kafka-pw-77"},
			"producer.override.sasl.jaas.config", "anything",
			"ssl.key.password", "abc")
		log.WithGroup("grp").Error("e", "err", errors.New("x debezium@123 y"))
		out := buf.String()
		for _, s := range []string{"debezium@123", "kafka-pw-77", "abc", "short", "anything"} {
			if strings.Contains(out, s) {
				t.Errorf("%s: %q in the log:\n%s", format, s, out)
			}
		}
		if n := strings.Count(out, redacted); n < 10 {
			t.Errorf("%s: %d redactions, want 10:\n%s", format, n, out)
		}
		if !strings.Contains(out, "attempt") || !strings.Contains(out, "component") {
			t.Errorf("%s: attributes lost:\n%s", format, out)
		}
	}
}

// Regression (issue 27, item 7): log/slog's JSON handler writes the C1
// controls (U+009B is a terminal's CSI) and DEL as they are.
func TestRedactHandlerEscapesC1(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewRedactor().Handler(slog.NewJSONHandler(&buf, nil)))
	log.Warn("m\u009b2J", "err", errors.New("server: \u009b31m\x7f"))
	out := buf.String()
	if strings.ContainsAny(out, "\u009b\x7f") || !strings.Contains(out, `\\u009b2J`) || !strings.Contains(out, `\\u007f`) {
		t.Errorf("C1 controls not escaped: %q", out)
	}
}
