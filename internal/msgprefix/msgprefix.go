// Package msgprefix is Debezium's message.prefix.include.list and
// message.prefix.exclude.list: which logical decoding messages, by
// prefix, are routed. The relay (replication) filters the stream with it
// and outbox.Emitter refuses a prefix it would skip, so both read the
// lists the same way. It imports only internal/textlist.
package msgprefix

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/outboxrelay/outboxrelay/internal/textlist"
)

// Filter holds the compiled lists: regexes matched case-insensitively
// against the whole prefix, as Debezium's Predicates do. At most one is
// set. The zero Filter includes every prefix.
type Filter struct {
	Include, Exclude         []*regexp.Regexp
	IncludeText, ExcludeText string
}

// Parse compiles the two lists' texts (split as Debezium's RegExSplitter
// splits them); Debezium refuses both at once, and so does Parse. Every
// problem is reported, joined.
func Parse(include, exclude string) (Filter, error) {
	f := Filter{IncludeText: include, ExcludeText: exclude}
	var errs []error
	f.Include = compile("message.prefix.include.list", include, &errs)
	f.Exclude = compile("message.prefix.exclude.list", exclude, &errs)
	if len(f.Include) > 0 && len(f.Exclude) > 0 {
		errs = append(errs, errors.New("message.prefix.include.list and message.prefix.exclude.list are both set; Debezium refuses that too: keep one"))
	}
	return f, errors.Join(errs...)
}

// compile compiles one list, appending its errors to errs.
func compile(key, text string, errs *[]error) []*regexp.Regexp {
	items, err := textlist.SplitRegex(text)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("%s: %v", key, err))
		return nil
	}
	var out []*regexp.Regexp
	for _, p := range items {
		re, err := regexp.Compile(`(?i)^(?:` + p + `)$`)
		if err != nil {
			*errs = append(*errs, fmt.Errorf("%s: %q is not a valid regular expression: %v; write message prefixes, e.g. outbox", key, p, err))
			continue
		}
		out = append(out, re)
	}
	return out
}

// Includes reports whether a message with this prefix passes the lists:
// it is in the include list (when set) and not in the exclude list.
func (f *Filter) Includes(prefix string) bool {
	if len(f.Include) > 0 {
		return matchesAny(f.Include, prefix)
	}
	return !matchesAny(f.Exclude, prefix)
}

// Literal is the prefix a producer writes with when the include list is
// exactly one prefix: a literal regex ("orders", "orders\\.v1" gives
// orders.v1), or one whose only operators are dots that match themselves
// ("orders.v1"). ok is false for anything else (several entries, a
// pattern, no include list).
func (f *Filter) Literal() (prefix string, ok bool) {
	items, _ := textlist.SplitRegex(f.IncludeText)
	if len(f.Include) != 1 || len(items) != 1 {
		return "", false
	}
	if re, err := regexp.Compile(items[0]); err == nil {
		if lit, complete := re.LiteralPrefix(); complete && lit != "" {
			return lit, true
		}
	}
	if plainDotted.MatchString(items[0]) {
		return items[0], true
	}
	return "", false
}

// plainDotted is a prefix whose only regex operator is the dot, which
// then matches itself.
var plainDotted = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// matchesAny reports whether any of res matches s.
func matchesAny(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}
