package router

import "testing"

func TestTopicRegex(t *testing.T) {
	tests := []struct {
		regex, replacement, value, want string
	}{
		{"(?<routedByValue>.*)", "outbox.event.${routedByValue}", "orders", "outbox.event.orders"},
		{"(?<routedByValue>.*)", "${routedByValue}", "Orders", "Orders"}, // case kept
		{"(.*)", "$1", "orders", "orders"},
		{"(.*)", `\$1`, "orders", "$1"},         // \$ is a literal dollar
		{"(.*)", `a\\b$1`, "x", `a\bx`},         // \\ is a literal backslash
		{"[a-z]+", "topic", "Orders", "Orders"}, // no whole match: raw value
		{"ord", "x", "orders", "orders"},        // a partial match is no match
		{"(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)", "$10", "abcdefghij", "j"},
		{"(a)(b)", "$10", "ab", "a0"}, // Java stops at the largest existing group
		{"(a)|(b)", "[$1$2]", "b", "[b]"},
		// replaceFirst replaces the first (leftmost) match, which is not
		// always the whole value: Java gives "xb" here.
		{"a|ab", "x", "ab", "xb"},
		{`(?<domain>[a-z]+)\.(?<version>v\d)`, "${version}.${domain}", "orders.v2", "v2.orders"},
		{`[\]a]+`, "x", "]a", "x"}, // escaped bracket inside a class
		{`[]a]+`, "x", "]a", "x"},  // leading bracket inside a class
	}
	for _, tt := range tests {
		re, err := compileTopicRegex(tt.regex, tt.replacement)
		if err != nil {
			t.Errorf("compile %q / %q: %v", tt.regex, tt.replacement, err)
			continue
		}
		if got := re.topic(tt.value); got != tt.want {
			t.Errorf("%q / %q on %q = %q, want %q", tt.regex, tt.replacement, tt.value, got, tt.want)
		}
	}
}

func TestTopicRegexRejects(t *testing.T) {
	bad := [][2]string{
		{"(?<a_b>.*)", "x"},      // Java group names have no underscore
		{"(?<!x)y", "x"},         // lookbehind
		{"(?=x)", "x"},           // lookahead: RE2 lacks it
		{"[[a]]", "x"},           // nested class
		{"(.*)", "$"},            // lone dollar
		{"(.*)", "$x"},           // not a group reference
		{"(.*)", "${1a}"},        // bad group name
		{"(.*)", "${unclosed"},   // missing brace
		{"(?<n>.*)", "${other}"}, // unknown name
	}
	for _, b := range bad {
		if _, err := compileTopicRegex(b[0], b[1]); err == nil {
			t.Errorf("compile %q / %q: no error", b[0], b[1])
		}
	}
}

func TestCheckTopicName(t *testing.T) {
	long := make([]byte, 250)
	for i := range long {
		long[i] = 'a'
	}
	for _, ok := range []string{"orders", "a.b_c-D9", string(long[:249]), "..."} {
		if err := CheckTopicName(ok); err != nil {
			t.Errorf("CheckTopicName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", string(long), "a b", "a/b", "é", "a$"} {
		if err := CheckTopicName(bad); err == nil {
			t.Errorf("CheckTopicName(%q) = nil, want an error", bad)
		}
	}
}
