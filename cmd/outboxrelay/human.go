package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/outboxrelay/outboxrelay/internal/config"
)

// printable escapes what a terminal would act on in text that may quote a
// server or a file: control characters (ESC starts the sequences that
// clear a screen, recolour it or set a window title; CR overwrites a
// line), DEL, the C1 controls and bytes that are not UTF-8, written as
// Go writes them in a quoted string (\x1b, \r, \u009b). Newlines and tabs
// stay: they are the structure of joined errors and of check's report.
func printable(s string) string {
	if !strings.ContainsFunc(s, needsEscape) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case needsEscape(c):
			q := fmt.Sprintf("%+q", string(c)) // "\x1b", "\r", "\u009b"
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func needsEscape(c rune) bool {
	return c < 0x20 && c != '\n' && c != '\t' || c == 0x7f || c >= 0x80 && c <= 0x9f
}

// humanWriter is a command's report to a person (check's and verify's
// lines): every write scrubbed of the configuration's secrets and made
// printable. The commands write whole lines, so a secret or a character
// is never split between two writes.
type humanWriter struct {
	w   io.Writer
	red *config.Redactor
}

func (h humanWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(h.w, printable(h.red.Scrub(string(p)))); err != nil {
		return 0, err
	}
	return len(p), nil
}
