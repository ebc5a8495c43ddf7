package config

import (
	"strconv"
	"strings"
	"testing"
)

// Regression (issue 27, item 10): JSON syntax errors gave no line or
// column, an empty file said EOF, a UTF-8 byte-order mark gave "invalid
// character 'ï'", and invalid UTF-8 was silently replaced by U+FFFD.
func TestDocumentErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"syntax error on line 3", "{\n  \"config\": {\n    \"a\": 1,,\n  }\n}", "c.json: reading connector JSON: line 3, column 12: invalid character ','"},
		{"missing comma", "{\"a\": \"x\"\n \"b\": \"y\"}", "c.json: reading connector JSON: line 2, column 2: invalid character '\"' after object key:value pair"},
		{"truncated", "{\n\"a\": \"x\",\n", "c.json: reading connector JSON: line 3, column 1: the file ends before the JSON is complete"},
		{"truncated string", `{"a": "x`, "c.json: reading connector JSON: line 1, column 9: the file ends before the JSON is complete"},
		{"column counts characters", `{"é": "ü" x}`, "c.json: reading connector JSON: line 1, column 11: invalid character 'x'"},
		{"empty", "", `c.json: file is empty: write the connector JSON, {"name": "…", "config": {…}}`},
		{"only white space", " \n\t\n", "c.json: file is empty"},
		{"only a byte-order mark", "\xef\xbb\xbf", "c.json: file is empty"},
		{"invalid UTF-8", "{\n\"database.dbname\": \"order_\xff_db\"}", "c.json: line 2, column 27: byte 0xff is not UTF-8; save the file as UTF-8"},
		{"Latin-1 file", "{\"a\": \"caf\xe9\"}", "c.json: line 1, column 11: byte 0xe9 is not UTF-8"},
	} {
		_, err := Parse([]byte(tc.doc), "c.json", noEnv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// Regression (issue 27, item 10): a UTF-8 byte-order mark, which Kafka
// Connect's Jackson skips, is skipped.
func TestByteOrderMarkSkipped(t *testing.T) {
	c, err := Parse([]byte("\xef\xbb\xbf"+minimal(`"slot.name": "s"`)), "c.json", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if c.Postgres["slot.name"] != "s" {
		t.Errorf("slot.name = %q, want s", c.Postgres["slot.name"])
	}
}

// Regression (issue 27, item 10): "slot.name": "" silently became
// debezium. An empty value of a key with a default is refused naming the
// key, of every kind; a key whose declaration says what empty means is
// kept.
func TestEmptyValueOfKeyWithDefault(t *testing.T) {
	for _, tc := range []struct{ extra, want string }{
		{`"slot.name": ""`, `c.json: slot.name: is empty: remove the key to get its default "debezium", or write a value`},
		{`"slot.name": "  "`, `slot.name: is empty`},
		{`"publication.name": ""`, `publication.name: is empty: remove the key to get its default "dbz_publication"`},
		{`"database.port": ""`, `database.port: is empty: remove the key to get its default "5432"`},
		{`"database.sslmode": ""`, `database.sslmode: is empty: remove the key to get its default "prefer"`},
		{`"status.update.interval.ms": ""`, `status.update.interval.ms: is empty`},
		{`"transforms": "outbox", "transforms.outbox.type": "io.debezium.transforms.outbox.EventRouter", "transforms.outbox.route.by.field": ""`,
			`transforms.outbox.route.by.field: is empty: remove the key to get its default "aggregatetype"`},
	} {
		_, err := Parse([]byte(minimal(tc.extra)), "c.json", noEnv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.extra, err, tc.want)
		}
	}
	c, err := Parse([]byte(minimal(`"ssl.endpoint.identification.algorithm": ""`)), "c.json", noEnv)
	if err != nil {
		t.Fatalf("ssl.endpoint.identification.algorithm empty (Kafka's way to turn the check off): %v", err)
	}
	if v, ok := c.Kafka["ssl.endpoint.identification.algorithm"]; !ok || v != "" {
		t.Errorf("ssl.endpoint.identification.algorithm = %q (set %v), want it kept empty", v, ok)
	}
	// A key without a default keeps its empty value.
	if c, err := Parse([]byte(minimal(`"database.sslrootcert": ""`)), "c.json", noEnv); err != nil || c.Postgres["database.sslrootcert"] != "" {
		t.Errorf("database.sslrootcert empty: %v", err)
	}
}

// Regression (issue 27, item 10): 1.5 M unknown keys printed 250 MB of
// warnings. A Config keeps the first MaxWarnings and counts the rest.
func TestWarningsCapped(t *testing.T) {
	var b strings.Builder
	const n = 20000
	for i := range n {
		b.WriteString(`"x.` + strconv.Itoa(i) + `": "v", `)
	}
	c, err := Parse([]byte(minimal(strings.TrimSuffix(b.String(), ", "))), "c.json", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != MaxWarnings || c.MoreWarnings != n-MaxWarnings {
		t.Errorf("%d warnings kept, %d counted; want %d and %d", len(c.Warnings), c.MoreWarnings, MaxWarnings, n-MaxWarnings)
	}
}
