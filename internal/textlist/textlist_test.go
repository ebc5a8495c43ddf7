package textlist

import (
	"slices"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"   ", nil},
		{",", nil},
		{" , ,, ", nil},
		{"outbox", []string{"outbox"}},
		{"a,b", []string{"a", "b"}},
		{" a , b ", []string{"a", "b"}},
		{"a,,b,", []string{"a", "b"}},
		{"\ta\n,b", []string{"a", "b"}},
		{"public.outbox, app\\.x", []string{"public.outbox", "app\\.x"}},
		{"a b, c", []string{"a b", "c"}}, // inner white space is kept
	}
	for _, tt := range tests {
		if got := Split(tt.in); !slices.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
			t.Errorf("Split(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// Regression: review-16 finding 6. message.prefix.include.list was split
// at every comma, so "evt-\d{1\,3}", one regex for Debezium's
// RegExSplitter, became two broken ones.
func TestSplitRegex(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" , ", nil},
		{"a,b", []string{"a", "b"}},
		{` a , b `, []string{"a", "b"}},
		{`evt-\d{1\,3}`, []string{`evt-\d{1,3}`}},
		{`public\.outbox,app\.x`, []string{`public\.outbox`, `app\.x`}},
		{`a\\,b`, []string{`a\\`, "b"}}, // an escaped backslash, then a separator
		{`a\,b,c`, []string{"a,b", "c"}},
	}
	for _, tt := range tests {
		got, err := SplitRegex(tt.in)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("SplitRegex(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if _, err := SplitRegex(`orders\`); err == nil || !strings.Contains(err.Error(), "unterminated") {
		t.Errorf("a trailing backslash: %v, want the unterminated escape error", err)
	}
}
