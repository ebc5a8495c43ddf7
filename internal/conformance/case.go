// Package conformance runs the same SQL through Debezium (Kafka Connect 4.1.1
// standalone, Debezium 3.6.1.Final's PostgreSQL connector and Outbox
// EventRouter, started by scripts/debezium) and through outboxrelay, each on
// its own replication slot and topic namespace, and compares what reached
// Kafka: topic, partition, key bytes, headers and value.
//
// The cases are SQL scripts in testdata/conformance with a small header (see
// ParseCase). A record pair is "byte-equal", or equal once a documented
// difference (README.md (Compatibility with Debezium), named in the case) is applied; anything
// else fails the run. The test writes a Markdown report.
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
// the transaction open for a later chunk.
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
	// order-column order, where poll mode follows the column (README, Poll
	// mode); its records are compared per key as sets.
	PollOrderColumn bool
	Setup           string
	Steps           []Step
}

// Override sets (or, with Delete, removes) one connector key.
type Override struct {
	Key, Value string
	Delete     bool
}

// Step is a chunk of the run section and the session it runs on.
type Step struct {
	Conn int
	SQL  string
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
	c := &Case{File: name, ID: strings.TrimSuffix(name, ".sql"), Records: -1}
	fail := func(line int, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, args...))
	}
	section := "header"
	conn := 1
	var setup, chunk strings.Builder
	flush := func() {
		if strings.TrimSpace(chunk.String()) != "" {
			c.Steps = append(c.Steps, Step{Conn: conn, SQL: chunk.String()})
		}
		chunk.Reset()
	}
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trim := strings.TrimSpace(line)
		switch {
		case trim == "-- @setup":
			if section != "header" {
				return nil, fail(n, "@setup must come before @run, once")
			}
			section = "setup"
			continue
		case trim == "-- @run":
			if section == "run" {
				return nil, fail(n, "a second @run")
			}
			section = "run"
			continue
		case strings.HasPrefix(trim, "-- @conn"):
			if section != "run" {
				return nil, fail(n, "@conn outside the @run section")
			}
			v, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(trim, "-- @conn")))
			if err != nil || v < 1 || v > 8 {
				return nil, fail(n, "@conn wants a session number 1..8")
			}
			flush()
			conn = v
			continue
		case strings.HasPrefix(trim, "-- @"):
			return nil, fail(n, "unknown directive %q", trim)
		}
		switch section {
		case "header":
			if trim == "" {
				continue
			}
			if !strings.HasPrefix(trim, "--") {
				return nil, fail(n, "SQL before -- @setup or -- @run")
			}
			key, val, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(trim, "--")), ":")
			if !ok {
				continue // a comment
			}
			key, val = strings.TrimSpace(key), strings.TrimSpace(val)
			switch key {
			case "case":
				c.Title = val
			case "records":
				v, err := strconv.Atoi(val)
				if err != nil || v < 0 {
					return nil, fail(n, "records: wants a count")
				}
				c.Records = v
			case "config":
				k, v, ok := strings.Cut(val, "=")
				if !ok || strings.TrimSpace(k) == "" {
					return nil, fail(n, "config: wants key = value")
				}
				o := Override{Key: strings.TrimSpace(k), Value: strings.TrimSpace(v)}
				o.Delete = o.Value == ""
				c.Config = append(c.Config, o)
			case "difference":
				for _, d := range strings.Split(val, ",") {
					d = strings.TrimSpace(d)
					if _, ok := Differences[d]; !ok {
						return nil, fail(n, "unknown difference %q (known: %s)", d, strings.Join(differenceNames(), ", "))
					}
					c.Differences = append(c.Differences, d)
				}
			case "ci":
				c.CI = val == "yes"
			case "poll-order":
				if val != "order-column" {
					return nil, fail(n, "poll-order: only `order-column` is known")
				}
				c.PollOrderColumn = true
			case "table":
				if val != "custom" {
					return nil, fail(n, "table: only `custom` is known")
				}
				c.CustomTable = true
			default:
				// free text such as `-- about: …`
			}
		case "setup":
			setup.WriteString(line)
			setup.WriteByte('\n')
		case "run":
			chunk.WriteString(line)
			chunk.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	flush()
	c.Setup = setup.String()
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
