package outbox

import (
	"context"
	"strings"
	"unicode/utf16"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// SpanContextFormat is how an outbox row holds its span context
// (Options.SpanContextFormat).
type SpanContextFormat int

const (
	// SpanContextProperties writes java.util.Properties text, as
	// Debezium's tracing documents it:
	// "traceparent=00-…-…-01\ntracestate=…\n", with Properties.store's
	// escapes (a tracestate's '=' as "\=").
	SpanContextProperties SpanContextFormat = iota
	// SpanContextW3C writes the W3C traceparent alone.
	SpanContextW3C
)

// SpanContext is the text the span-context column gets for ctx in format
// f: "" when ctx holds no valid span context.
func SpanContext(ctx context.Context, f SpanContextFormat) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	if f == SpanContextW3C {
		return c["traceparent"]
	}
	var b strings.Builder
	for _, k := range []string{"traceparent", "tracestate"} {
		if v := c[k]; v != "" {
			b.WriteString(k + "=")
			writeEscaped(&b, v)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// writeEscaped writes v as Properties.store writes a value: '\\', '=',
// ':', '#', '!' and a leading space escaped with a backslash, control
// characters as \t \n \r \f, anything else outside printable ASCII as
// \uXXXX.
func writeEscaped(b *strings.Builder, v string) {
	for i, r := range v {
		switch {
		case r == '\\' || r == '=' || r == ':' || r == '#' || r == '!' || (r == ' ' && i == 0):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || r > 0x7e:
			for _, u := range utf16.Encode([]rune{r}) {
				b.WriteString(`\u`)
				const hex = "0123456789ABCDEF"
				b.Write([]byte{hex[u>>12&0xf], hex[u>>8&0xf], hex[u>>4&0xf], hex[u&0xf]})
			}
		default:
			b.WriteRune(r)
		}
	}
}
