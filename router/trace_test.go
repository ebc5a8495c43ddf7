package router

import "testing"

// Regression (issue 29): a tracestate written by Java's Properties.store
// ("vendor\=x") was forwarded with its escapes; Properties.load, which
// Debezium reads the column with, takes them back ("vendor=x").
func TestAppendUnescaped(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`vendor\=x`, "vendor=x"},
		{`rojo\=00f067aa0ba902b7,congo\=t61rcWkgMzE`, "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"},
		{`a\:b\\c\#d\!e`, `a:b\c#d!e`},
		{`\t\n\r\f`, "\t\n\r\f"},
		{`\u00e9t\u00C9`, "étÉ"},
		{`\u00zz`, `\u00zz`},
		{`end\`, `end\`},
		{"plain", "plain"},
		{"", ""},
	} {
		if got := string(appendUnescaped(nil, []byte(tc.in))); got != tc.want {
			t.Errorf("appendUnescaped(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
