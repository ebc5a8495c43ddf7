// Package internal groups helpers that are not part of outboxrelay's public
// API: the test bed (internal/testbed) and configuration parsing shared by
// the commands.
package internal
