package verify

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Emitted is one line of an emitted-events list: an event the application
// wrote as a logical decoding message (an outbox without a table, which
// verify cannot read back from a table).
type Emitted struct {
	Event
	Route string // the route value (route.by.field): picks the topic
}

// ReadEmitted parses an emitted-events list: one event per line, as the
// application logs them after each commit (or as it can query them from
// its own business tables), with three tab-separated fields: event id,
// route value, key. Blank lines and lines starting with # are skipped.
// The line number is the event's order, and only the order of lines of
// one key is checked: those must be in that key's commit order (a
// multi-event Emit logs its events in slice order, which is theirs).
// Lines of different keys may interleave freely, so an application
// logging from several goroutines after commit is fine unless two of them
// write one key concurrently.
func ReadEmitted(r io.Reader) ([]Emitted, error) {
	var out []Emitted
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 3 || f[0] == "" || f[1] == "" {
			return nil, fmt.Errorf("verify: emitted events, line %d: want three tab-separated fields (event id, route value, key), got %q", n, line)
		}
		out = append(out, Emitted{Event: Event{ID: f[0], Key: f[2], Order: int64(n)}, Route: f[1]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("verify: reading emitted events: %w", err)
	}
	return out, nil
}
