package textlist

import (
	"slices"
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
