// Package internal holds the packages that are not part of outboxrelay's
// public API. What each one owns, and what it may not import, is in the
// one package table of DESIGN.md ("Packages").
package internal
