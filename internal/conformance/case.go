// Package conformance runs the same SQL through Debezium (Kafka Connect 4.1.1
// standalone, Debezium 3.7.1.Final's PostgreSQL connector and Outbox
// EventRouter, started by scripts/debezium) and through outboxrelay, each on
// its own replication slot and topic namespace, and compares what reached
// Kafka: topic, partition, key bytes, headers and value.
//
// The cases are SQL scripts in testdata/conformance with a small header (see
// ParseCase). A record pair is "byte-equal", or equal once a documented
// difference (docs/compatibility.md, named in the case) is applied; anything
// else fails the run. The test writes a Markdown report.
//
// One runner (Env.Run) serves both comparisons, picked by its Mode:
// AgainstDebezium (the above), and PollAgainstLogical, outboxrelay's poll
// mode against its logical mode on the insert-only cases, with no Debezium.
package conformance

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Case is one conformance script.
//
// Header lines (before the first SQL), each `-- key: value`:
//
//	-- case: the title
//	-- records: N            records each side must produce (checked on both)
//	-- config: key = value   a connector key set for both sides (repeatable;
//	                         ${schema} is the case's schema); `key =` deletes it
//	-- difference: a, b      documented differences this case may show (Differences)
//	-- ci: yes               part of the reduced form that `make test` runs
//	-- table: custom         do not create the fixture's outbox table
//	-- poll-order: order-column   poll mode may order one key's records by the
//	                         order column rather than by commit (TestConformancePoll)
//
// The body has a `-- @setup` section (DDL run before the slots exist, in the
// case's own schema, after the fixture's outbox table is created) and a
// `-- @run` section (run after both relays stream). `-- @conn N` switches the
// run section to session N (1 by default), for interleaved transactions; each
// chunk is sent as one simple-protocol query, so `BEGIN; INSERT …;` leaves
// the transaction open for a later chunk. `-- @restart N` waits until each
// side has N records, stops both (Connect's stop API: the task commits its
// offsets; SIGTERM for outboxrelay) and starts them again on their
// recorded positions before the next chunk (Restarts).
type Case struct {
	File        string
	ID          string // file name without .sql
	Title       string
	Records     int
	Config      []Override
	Differences []string
	CI          bool
	CustomTable bool
	// PollOrderColumn: the case commits one aggregate's rows out of their
	// order-column order, where poll mode follows the column (docs/poll-mode.md); its records are compared per key as sets.
	PollOrderColumn bool
	Setup           string
	Steps           []Step
}

// Override sets (or, with Delete, removes) one connector key.
type Override struct {
	Key, Value string
	Delete     bool
}

// Step is a chunk of the run section and the session it runs on, or, with
// Restart set, a restart of both sides once each has Restart records.
type Step struct {
	Conn    int
	SQL     string
	Restart int
}

// Restarts reports whether the case restarts the two sides (a poll run
// cannot: it is compared as it runs).
func (c *Case) Restarts() bool {
	for _, s := range c.Steps {
		if s.Restart > 0 {
			return true
		}
	}
	return false
}

// Sessions is the number of database sessions the run section uses.
func (c *Case) Sessions() int {
	n := 1
	for _, s := range c.Steps {
		if s.Conn > n {
			n = s.Conn
		}
	}
	return n
}

// Messages reports whether the case routes logical decoding messages (its
// config names DecodeLogicalDecodingMessageContent): it needs PostgreSQL
// 14+, and polling cannot run it.
func (c *Case) Messages() bool {
	for _, o := range c.Config {
		if strings.HasSuffix(o.Value, "DecodeLogicalDecodingMessageContent") {
			return true
		}
	}
	return false
}

// Allows reports whether the case names difference d.
func (c *Case) Allows(d string) bool {
	for _, x := range c.Differences {
		if x == d {
			return true
		}
	}
	return false
}

// LoadCases reads every *.sql file of dir, sorted by name.
func LoadCases(dir string) ([]*Case, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []*Case
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		c, err := ParseCase(filepath.Base(f), src)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no *.sql case in %s", dir)
	}
	return out, nil
}

// ParseCase parses one case script; name is its file name.
func ParseCase(name string, src []byte) (*Case, error) {
	p := &caseParser{c: &Case{File: name, ID: strings.TrimSuffix(name, ".sql"), Records: -1}, section: "header", conn: 1}
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if err := p.line(n, sc.Text()); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p.flush()
	c := p.c
	c.Setup = p.setup.String()
	switch {
	case c.Title == "":
		return nil, fmt.Errorf("%s: no `-- case:` title", name)
	case c.Records < 0:
		return nil, fmt.Errorf("%s: no `-- records:` count", name)
	case len(c.Steps) == 0:
		return nil, fmt.Errorf("%s: no `-- @run` section", name)
	}
	return c, nil
}

// caseParser is ParseCase's state between lines.
type caseParser struct {
	c            *Case
	section      string // header, setup or run
	conn         int    // the session of the run chunk being read
	setup, chunk strings.Builder
}

func (p *caseParser) fail(line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.c.File, line, fmt.Sprintf(format, args...))
}

// flush ends the run chunk being read, keeping it unless it is blank.
func (p *caseParser) flush() {
	if strings.TrimSpace(p.chunk.String()) != "" {
		p.c.Steps = append(p.c.Steps, Step{Conn: p.conn, SQL: p.chunk.String()})
	}
	p.chunk.Reset()
}

// line reads line n: a directive, a header line, or SQL of a section.
func (p *caseParser) line(n int, line string) error {
	trim := strings.TrimSpace(line)
	if strings.HasPrefix(trim, "-- @") {
		return p.directive(n, trim)
	}
	switch p.section {
	case "header":
		return p.header(n, trim)
	case "setup":
		p.setup.WriteString(line)
		p.setup.WriteByte('\n')
	case "run":
		p.chunk.WriteString(line)
		p.chunk.WriteByte('\n')
	}
	return nil
}

// directive reads -- @setup, -- @run or -- @conn N.
func (p *caseParser) directive(n int, trim string) error {
	switch {
	case trim == "-- @setup":
		if p.section != "header" {
			return p.fail(n, "@setup must come before @run, once")
		}
		p.section = "setup"
	case trim == "-- @run":
		if p.section == "run" {
			return p.fail(n, "a second @run")
		}
		p.section = "run"
	case strings.HasPrefix(trim, "-- @conn"):
		if p.section != "run" {
			return p.fail(n, "@conn outside the @run section")
		}
		v, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(trim, "-- @conn")))
		if err != nil || v < 1 || v > 8 {
			return p.fail(n, "@conn wants a session number 1..8")
		}
		p.flush()
		p.conn = v
	case strings.HasPrefix(trim, "-- @restart"):
		if p.section != "run" {
			return p.fail(n, "@restart outside the @run section")
		}
		v, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(trim, "-- @restart")))
		if err != nil || v < 1 {
			return p.fail(n, "@restart wants the records each side must have before the restart, e.g. -- @restart 2")
		}
		p.flush()
		p.c.Steps = append(p.c.Steps, Step{Conn: p.conn, Restart: v})
	default:
		return p.fail(n, "unknown directive %q", trim)
	}
	return nil
}

// header reads a header line: blank, a comment, or `-- key: value`.
func (p *caseParser) header(n int, trim string) error {
	if trim == "" {
		return nil
	}
	if !strings.HasPrefix(trim, "--") {
		return p.fail(n, "SQL before -- @setup or -- @run")
	}
	key, val, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(trim, "--")), ":")
	if !ok {
		return nil // a comment
	}
	key, val = strings.TrimSpace(key), strings.TrimSpace(val)
	c := p.c
	switch key {
	case "case":
		c.Title = val
	case "records":
		v, err := strconv.Atoi(val)
		if err != nil || v < 0 {
			return p.fail(n, "records: wants a count")
		}
		c.Records = v
	case "config":
		k, v, ok := strings.Cut(val, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return p.fail(n, "config: wants key = value")
		}
		o := Override{Key: strings.TrimSpace(k), Value: strings.TrimSpace(v)}
		o.Delete = o.Value == ""
		c.Config = append(c.Config, o)
	case "difference":
		for _, d := range strings.Split(val, ",") {
			d = strings.TrimSpace(d)
			if _, ok := Differences[d]; !ok {
				return p.fail(n, "unknown difference %q (known: %s)", d, strings.Join(differenceNames(), ", "))
			}
			c.Differences = append(c.Differences, d)
		}
	case "ci":
		c.CI = val == "yes"
	case "poll-order":
		if val != "order-column" {
			return p.fail(n, "poll-order: only `order-column` is known")
		}
		c.PollOrderColumn = true
	case "table":
		if val != "custom" {
			return p.fail(n, "table: only `custom` is known")
		}
		c.CustomTable = true
	default:
		// free text such as `-- about: …`
	}
	return nil
}
