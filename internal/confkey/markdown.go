package confkey

import (
	"fmt"
	"strings"
)

// Markers around the generated key reference in the docs; the test of
// this package finds them in README.md or any file under docs/ and
// checks (or, with -update, rewrites) what lies between.
const (
	MarkdownBegin = "<!-- keys:begin: generated from internal/confkey by `go test ./internal/confkey -run TestKeyReference -update`; do not edit -->"
	MarkdownEnd   = "<!-- keys:end -->"
)

// Markdown renders the table of keys as the docs' key reference: per
// origin, a table of the keys outboxrelay reads or checks (type and range,
// default, what it does), then the keys it accepts with no effect.
func Markdown() string {
	var b strings.Builder
	table := keyTable()
	for _, origin := range Origins() {
		fmt.Fprintf(&b, "\n#### %s keys\n\n", origin)
		b.WriteString("| key | type | default | outboxrelay |\n| --- | --- | --- | --- |\n")
		var ignored []string
		for _, d := range table {
			switch {
			case d.Origin != origin:
			case d.NoEffect != "":
				ignored = append(ignored, "`"+d.Key+"`")
			default:
				fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", d.Key, cell(d.typeText()), cell(d.defaultText()), cell(d.docText()))
			}
		}
		if len(ignored) > 0 {
			fmt.Fprintf(&b, "\nAccepted with a warning naming why they change nothing: %s.\n", strings.Join(ignored, ", "))
		}
	}
	return b.String()
}

// typeText is the kind with its range or accepted values.
func (d KeyDoc) typeText() string {
	switch t := d.Type(); {
	case d.Numeric():
		lo, hi := d.Range()
		return fmt.Sprintf("%s, %d to %d", t, lo, hi)
	case t == KindEnum || t == KindClass:
		return "one of " + strings.Join(d.Values, ", ")
	case len(d.Values) == 1 && d.Values[0] == "":
		return "refused"
	default:
		return t.String()
	}
}

func (d KeyDoc) defaultText() string {
	switch {
	case d.Required:
		return "required"
	case d.Default != "" && d.DefaultDoc != "":
		return "`" + d.Default + "` (" + html(d.DefaultDoc) + ")"
	case d.Default != "":
		return "`" + d.Default + "`"
	}
	return html(d.DefaultDoc)
}

func (d KeyDoc) docText() string {
	if d.Secret {
		return html(d.Doc) + " (secret: never printed)"
	}
	return html(d.Doc)
}

// html escapes text outside code spans that Markdown would take for
// HTML: transforms.<alias>.* must not lose its <alias>.
func html(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// cell escapes a table cell's pipes.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
