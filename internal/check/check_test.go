package check

import (
	"bytes"
	"testing"
)

func TestFormatChecks(t *testing.T) {
	var b bytes.Buffer
	failed := Format(&b, []Result{
		{Name: "wal_level", OK: true, Detail: "logical"},
		{Name: "publication p", Detail: "does not exist", Fix: "CREATE PUBLICATION p FOR TABLE public.outbox;"},
		{Name: "columns of public.outbox", Detail: "a missing; b missing", Fix: "ALTER TABLE x ADD COLUMN a text;\nALTER TABLE x ADD COLUMN b text;"},
	})
	want := `✓ wal_level: logical
✗ publication p: does not exist
    fix: CREATE PUBLICATION p FOR TABLE public.outbox;
✗ columns of public.outbox: a missing; b missing
    fix: ALTER TABLE x ADD COLUMN a text;
    fix: ALTER TABLE x ADD COLUMN b text;
`
	if failed != 2 || b.String() != want {
		t.Errorf("Format = %d,\n%s\nwant 2,\n%s", failed, b.String(), want)
	}
}
