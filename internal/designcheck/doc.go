// Package designcheck holds only tests: they keep DESIGN.md true. Every
// "invariant N" or "spec N" cited in a comment is defined there, every test
// it names exists, the import boundaries of its package map hold, and no
// package keeps mutable state at package level (invariant 8).
package designcheck
