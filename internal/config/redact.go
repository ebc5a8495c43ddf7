package config

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"unicode/utf8"
)

// Redactor keeps secrets out of log records: the values of the secret keys
// of the loaded configuration (Set), wherever they appear in a record's
// message or attributes, and the whole value of an attribute named by a
// secret key. A logger exists before the file is loaded (its warnings are
// logged), so the secrets are set afterwards; until then only attributes
// named by secret keys are redacted.
type Redactor struct {
	secrets atomic.Pointer[[]string]
	keys    map[string]bool // declared secret keys
}

// NewRedactor returns a Redactor with no secret values yet.
func NewRedactor() *Redactor {
	keys := map[string]bool{}
	for _, d := range keyTable() {
		if d.Secret {
			keys[d.Key] = true
		}
	}
	return &Redactor{keys: keys}
}

// Set makes c's secrets (Config.Secrets) the values to redact.
func (r *Redactor) Set(c *Config) {
	s := append([]string(nil), c.Secrets...)
	r.secrets.Store(&s)
}

// Scrub replaces every secret value in s, as Config.Scrub does.
func (r *Redactor) Scrub(s string) string {
	if p := r.secrets.Load(); p != nil {
		return scrub(s, *p)
	}
	return s
}

// SecretKey reports whether key names a secret: a declared secret key
// (also under producer. or producer.override.), or any key whose name
// holds "password", as classify decides.
func (r *Redactor) SecretKey(key string) bool {
	if strings.Contains(strings.ToLower(key), "password") {
		return true
	}
	for _, p := range []string{"producer.override.", "producer."} {
		if rest, ok := strings.CutPrefix(key, p); ok {
			key = rest
			break
		}
	}
	return r.keys[key]
}

// Handler returns a slog.Handler that writes through next with every
// record redacted (Redactor) and C1 control characters escaped (the
// handlers of log/slog escape or quote the others). Every logger of the
// binary is made with it.
func (r *Redactor) Handler(next slog.Handler) slog.Handler {
	return &redactHandler{next: next, r: r}
}

type redactHandler struct {
	next slog.Handler
	r    *Redactor
}

func (h *redactHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.text(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.r.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs redacts attrs with the secrets known now: loggers are given
// attributes after the file is loaded.
func (h *redactHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.r.attr(a)
	}
	return &redactHandler{next: h.next.WithAttrs(red), r: h.r}
}

func (h *redactHandler) WithGroup(name string) slog.Handler {
	return &redactHandler{next: h.next.WithGroup(name), r: h.r}
}

// attr is a redacted: its value replaced when its key names a secret,
// else scrubbed of secret values, groups attribute by attribute.
func (r *Redactor) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	if r.SecretKey(a.Key) && !(v.Kind() == slog.KindString && v.String() == "") {
		return slog.String(a.Key, redacted)
	}
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, r.text(v.String()))
	case slog.KindGroup:
		group := v.Group()
		out := make([]any, len(group))
		for i, g := range group {
			out[i] = r.attr(g)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		var text string
		switch x := v.Any().(type) {
		case error:
			text = x.Error()
		case fmt.Stringer:
			text = x.String()
		default:
			text = fmt.Sprintf("%+v", x)
		}
		if t := r.text(text); t != text {
			return slog.String(a.Key, t) // else keep the value, and how the handler writes it
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// text is s scrubbed and with C1 control characters escaped.
func (r *Redactor) text(s string) string {
	return EscapeC1(r.Scrub(s))
}

// EscapeC1 escapes the C1 control characters (U+0080 to U+009F; U+009B
// is a terminal's CSI, as ESC [ is) and DEL as \u0080 … \u009f and
// \u007f. log/slog's JSON handler escapes the C0 characters but writes
// these as they are.
func EscapeC1(s string) string {
	if !strings.ContainsFunc(s, isC1) {
		return s
	}
	var b strings.Builder
	for _, c := range s {
		if isC1(c) {
			fmt.Fprintf(&b, `\u%04x`, c)
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

func isC1(c rune) bool { return c == 0x7f || c >= 0x80 && c <= 0x9f && c != utf8.RuneError }
