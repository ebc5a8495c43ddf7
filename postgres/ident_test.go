package postgres

import "testing"

// Regression (issue 27, item 8): QuoteIdent left reserved words bare, so
// a table or column named order or user made the statements it wrote
// syntax errors. It quotes as quote_ident does: unless lower-case letters,
// digits and underscores not starting with a digit, and not a keyword
// quote_ident quotes (reserved, type_func_name or col_name); an
// unreserved keyword stays bare.
func TestQuoteIdent(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"outbox", "outbox"},
		{"outbox_2026", "outbox_2026"},
		{"_x", "_x"},
		{"order", `"order"`},               // reserved
		{"user", `"user"`},                 // reserved
		{"select", `"select"`},             // reserved
		{"left", `"left"`},                 // type_func_name
		{"between", `"between"`},           // col_name
		{"json_table", `"json_table"`},     // col_name (PostgreSQL 17+)
		{"merge_action", `"merge_action"`}, // col_name (PostgreSQL 17+)
		{"abort", "abort"},                 // unreserved: stays bare
		{"publication", "publication"},     // unreserved
		{"Order", `"Order"`},
		{"OrdersPub", `"OrdersPub"`},
		{"1st", `"1st"`},
		{"a b", `"a b"`},
		{`we"ird`, `"we""ird"`},
		{"", `""`},
		{"é", `"é"`},
	} {
		if got := QuoteIdent(tc.in); got != tc.want {
			t.Errorf("QuoteIdent(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
