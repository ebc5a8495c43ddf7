// Package textlist splits the comma-separated lists of Kafka Connect and
// Debezium configuration values (transforms, table.include.list,
// bootstrap.servers, …). It imports nothing of the project, so any package
// may use it without an import cycle.
package textlist

import "strings"

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
