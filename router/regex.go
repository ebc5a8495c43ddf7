package router

import (
	"fmt"
	"regexp"
	"strings"
)

// topicRegex is route.topic.regex and route.topic.replacement compiled.
// Debezium hands both to Kafka's RegexRouter, which calls Java's
// Matcher.matches() and then replaceFirst(): the regex must match the WHOLE
// route value, and the replacement then replaces the first (leftmost) match,
// which is not always the whole value (for `a|ab` against "ab" it is "a").
type topicRegex struct {
	whole *regexp.Regexp // anchored at both ends: Java's matches()
	first *regexp.Regexp // unanchored: Java's find() inside replaceFirst()
	repl  []replPart
}

// replPart is a literal piece of the replacement, or a group reference when
// group >= 0.
type replPart struct {
	lit   string
	group int
}

func compileTopicRegex(javaRegex, replacement string) (*topicRegex, error) {
	goRegex, err := translateJavaRegex(javaRegex)
	if err != nil {
		return nil, err
	}
	first, err := regexp.Compile(goRegex)
	if err != nil {
		return nil, fmt.Errorf("not a regular expression outboxrelay can run (Go RE2 syntax, Java named groups allowed): %w", err)
	}
	for _, name := range first.SubexpNames() {
		if name != "" && !javaGroupName(name) {
			return nil, fmt.Errorf("group name %q is not a Java group name (ASCII letters and digits, starting with a letter)", name)
		}
	}
	whole := regexp.MustCompile(`\A(?:` + goRegex + `)\z`)
	repl, err := parseJavaReplacement(replacement, first)
	if err != nil {
		return nil, err
	}
	return &topicRegex{whole: whole, first: first, repl: repl}, nil
}

// topic renders the route value into a topic name; a value the regex does
// not match whole is the topic as it is (RegexRouter leaves the record's
// topic unchanged).
func (t *topicRegex) topic(value string) string {
	if !t.whole.MatchString(value) {
		return value
	}
	m := t.first.FindStringSubmatchIndex(value)
	if m == nil { // cannot happen: a whole match is also a match
		return value
	}
	var b strings.Builder
	b.WriteString(value[:m[0]])
	for _, p := range t.repl {
		if p.group < 0 {
			b.WriteString(p.lit)
			continue
		}
		// A group that took no part in the match adds nothing, as in Java.
		if s, e := m[2*p.group], m[2*p.group+1]; s >= 0 {
			b.WriteString(value[s:e])
		}
	}
	b.WriteString(value[m[1]:])
	return b.String()
}

// translateJavaRegex rewrites the Java syntax that has a Go equivalent
// (named groups `(?<name>…)` become `(?P<name>…)`) and rejects the Java
// syntax that Go would silently read differently: nested character classes
// and class intersection. Everything else is left for regexp.Compile, which
// rejects what RE2 lacks (lookaround, backreferences, possessive
// quantifiers).
func translateJavaRegex(s string) (string, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			b.WriteByte(c)
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
			continue
		case inClass:
			switch {
			case c == ']':
				inClass = false
			case c == '[':
				return "", fmt.Errorf("nested character class at offset %d: Java reads it as a union, Go as a literal '['; write the union as one class, e.g. [a-z0-9]", i)
			case c == '&' && i+1 < len(s) && s[i+1] == '&':
				return "", fmt.Errorf("character class intersection '&&' at offset %d is Java-only; list the characters you want instead", i)
			}
		case c == '[':
			inClass = true
			b.WriteByte(c)
			// A ']' right after '[' or '[^' is a literal in both dialects.
			if i+1 < len(s) && s[i+1] == '^' {
				i++
				b.WriteByte('^')
			}
			if i+1 < len(s) && s[i+1] == ']' {
				i++
				b.WriteByte(']')
			}
			continue
		case strings.HasPrefix(s[i:], "(?<="), strings.HasPrefix(s[i:], "(?<!"):
			return "", fmt.Errorf("lookbehind at offset %d is not supported (Go regexp has no lookaround); match the whole value with groups instead", i)
		case strings.HasPrefix(s[i:], "(?<"):
			b.WriteString("(?P<")
			i += len("(?<") - 1
			continue
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

// parseJavaReplacement parses Java's Matcher replacement syntax: `$n` (the
// longest group number that exists, as Java reads it), `${name}`, and `\x`
// for a literal x. The errors are the ones Java would throw at run time,
// caught here at start-up.
func parseJavaReplacement(s string, re *regexp.Regexp) ([]replPart, error) {
	var parts []replPart
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, replPart{lit: lit.String(), group: -1})
			lit.Reset()
		}
	}
	groups := re.NumSubexp()
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			if i+1 == len(s) {
				return nil, fmt.Errorf("ends with a lone '\\'; write '\\\\' for a literal backslash")
			}
			i++
			lit.WriteByte(s[i])
		case '$':
			if i+1 == len(s) {
				return nil, fmt.Errorf("ends with a lone '$'; write '\\$' for a literal dollar sign")
			}
			g, n, err := parseGroupRef(s[i+1:], re, groups)
			if err != nil {
				return nil, err
			}
			flush()
			parts = append(parts, replPart{group: g})
			i += n
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return parts, nil
}

// parseGroupRef reads the group reference after a '$' and returns the
// group index and how many bytes it used.
func parseGroupRef(s string, re *regexp.Regexp, groups int) (group, n int, err error) {
	if s[0] == '{' {
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return 0, 0, fmt.Errorf("'${' without a closing '}'")
		}
		name := s[1:end]
		if !javaGroupName(name) {
			return 0, 0, fmt.Errorf("${%s}: a group name starts with a letter and has only ASCII letters and digits", name)
		}
		g := re.SubexpIndex(name)
		if g < 0 {
			return 0, 0, fmt.Errorf("${%s} names no group of route.topic.regex; add (?<%s>…) to the regex or write \\$ for a literal dollar sign", name, name)
		}
		return g, end + 1, nil
	}
	if s[0] < '0' || s[0] > '9' {
		return 0, 0, fmt.Errorf("'$' must be followed by a group number or {name}; write '\\$' for a literal dollar sign")
	}
	group = int(s[0] - '0')
	if group > groups {
		return 0, 0, fmt.Errorf("$%d refers to a group that route.topic.regex does not have (it has %d)", group, groups)
	}
	n = 1
	// Java keeps reading digits while the number still names a group.
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		next := group*10 + int(s[n]-'0')
		if next > groups {
			break
		}
		group = next
		n++
	}
	return group, n, nil
}

func javaGroupName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}
