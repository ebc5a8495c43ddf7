// Package textlist splits the comma-separated lists of Kafka Connect and
// Debezium configuration values (transforms, table.include.list,
// bootstrap.servers, …). It imports nothing of the project, so any package
// may use it without an import cycle.
package textlist

import (
	"fmt"
	"strings"
)

// Split splits s at commas, trims the white space around each item and
// drops the empty ones, as Connect's ConfigDef LIST type does: " a, ,b,"
// is [a b]. An empty or blank s gives nil.
func Split(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// SplitRegex splits a list of regular expressions as Debezium's
// Strings.RegExSplitter does (table.include.list,
// message.prefix.include.list, …): at commas, except one escaped by a
// backslash ("\,"), which stays in its item as a plain comma; any other
// backslash pair is kept as it is, for the regex. Items are trimmed and
// the empty ones dropped. A backslash at the very end is an error, as in
// Debezium ("Unterminated escape sequence").
func SplitRegex(s string) ([]string, error) {
	var out []string
	add := func(item string) {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, strings.ReplaceAll(item, `\,`, ","))
		}
	}
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 == len(s) {
				return nil, fmt.Errorf("%q ends in an unterminated escape sequence (a lone backslash); write \\\\ for a backslash, \\, for a comma", s)
			}
			i++
		case ',':
			add(s[start:i])
			start = i + 1
		}
	}
	add(s[start:])
	return out, nil
}
