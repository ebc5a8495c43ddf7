package relay

import (
	"testing"

	"github.com/outboxrelay/outboxrelay/capture"
)

// The poison policy dumps a row as a JSON object of its columns' text, and
// a logical decoding message as the row of its prefix and content, which
// the router no longer receives as two pseudo-columns (README: the
// dead-letter record is {"prefix":…,"content":…}).
func TestRowJSON(t *testing.T) {
	tests := []struct {
		name string
		row  capture.Row
		want string
	}{
		{"columns, NULL and unchanged TOAST as null", capture.Row{Op: capture.OpCreate, Table: "public.outbox", Columns: []capture.Column{
			{Name: "id", OID: 25, Text: []byte("e1")},
			{Name: "payload", OID: 3802, Text: []byte(`{"a": "b\n"}`)},
			{Name: "sent_at", OID: 1184, Null: true},
			{Name: "big", OID: 25, Unchanged: true},
		}}, `{"id":"e1","payload":"{\"a\": \"b\\n\"}","sent_at":null,"big":null}`},
		{"no columns", capture.Row{Op: capture.OpDelete}, `{}`},
		{"a message: prefix and content", capture.Row{Op: capture.OpMessage, Prefix: "outbox", Content: []byte(`not "json"`)},
			`{"prefix":"outbox","content":"not \"json\""}`},
		{"a message without content", capture.Row{Op: capture.OpMessage, Prefix: "p"}, `{"prefix":"p","content":""}`},
	}
	for _, tt := range tests {
		if got := string(rowJSON(&tt.row)); got != tt.want {
			t.Errorf("%s: rowJSON = %s, want %s", tt.name, got, tt.want)
		}
		// The budget counts the dump's members (JSON escapes at most
		// double a byte) beside the 1024 bytes for headers and braces.
		if size, members := poisonRowBytes(&tt.row), len(tt.want)-2; size < int64(1024+members) {
			t.Errorf("%s: poisonRowBytes = %d, less than 1024 and the dump's %d bytes of members", tt.name, size, members)
		}
	}
}
