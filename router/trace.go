package router

import (
	"bytes"
	"unicode/utf8"
)

// spanContext extracts the W3C trace context from the
// tracing.span.context.field column. Debezium's tracing writes that column
// as java.util.Properties text ("traceparent=00-…\ntracestate=…"); a bare
// traceparent is accepted too. The results alias text. ok is false when no
// valid traceparent is found.
func spanContext(text []byte) (traceparent, tracestate []byte, ok bool) {
	if t := bytes.TrimSpace(text); validTraceparent(t) {
		return t, nil, true
	}
	for len(text) > 0 {
		var line []byte
		if i := bytes.IndexAny(text, "\r\n"); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			line, text = text, nil
		}
		line = bytes.TrimLeft(line, " \t\f")
		if len(line) == 0 || line[0] == '#' || line[0] == '!' {
			continue
		}
		sep := bytes.IndexAny(line, "=: \t")
		if sep < 0 {
			continue
		}
		key := line[:sep]
		value := bytes.TrimLeft(line[sep+1:], " \t\f=:")
		value = bytes.TrimRight(value, " \t\f")
		switch string(key) {
		case "traceparent":
			traceparent = value
		case "tracestate":
			tracestate = value
		}
	}
	if !validTraceparent(traceparent) {
		return nil, nil, false
	}
	return traceparent, tracestate, true
}

// validTraceparent checks the version-00 layout of the W3C traceparent:
// 2 hex version, 32 hex trace id, 16 hex parent id, 2 hex flags, lower-case,
// ids not all zero. Later versions may append "-…" fields.
func validTraceparent(b []byte) bool {
	if len(b) < 55 || (len(b) > 55 && (b[55] != '-' || string(b[:2]) == "00")) {
		return false
	}
	if b[2] != '-' || b[35] != '-' || b[52] != '-' || string(b[:2]) == "ff" {
		return false
	}
	for _, r := range [][2]int{{0, 2}, {3, 35}, {36, 52}, {53, 55}} {
		for _, c := range b[r[0]:r[1]] {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
	}
	return !allZero(b[3:35]) && !allZero(b[36:52])
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != '0' {
			return false
		}
	}
	return true
}

// appendUnescaped appends a java.util.Properties value with its escapes
// taken back as Properties.load does: \t \n \r \f, \uXXXX, and a
// backslash before any other character is that character. A malformed
// \u escape is kept as written (Java refuses the whole file).
func appendUnescaped(dst, v []byte) []byte {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c != '\\' || i+1 == len(v) {
			dst = append(dst, c)
			continue
		}
		i++
		switch c = v[i]; c {
		case 't':
			dst = append(dst, '\t')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 'f':
			dst = append(dst, '\f')
		case 'u':
			if r, ok := hex4(v[i+1:]); ok {
				dst = utf8.AppendRune(dst, r)
				i += 4
			} else {
				dst = append(dst, '\\', 'u')
			}
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
