// Package designcheck holds only tests: they keep DESIGN.md true. Every
// "invariant N" or "spec N" cited in a comment is defined there, every test
// it names exists, its one package table lists every package of the module
// (and only those), the import boundaries of that table hold, and no
// package keeps mutable state at package level (invariant 8).
package designcheck
