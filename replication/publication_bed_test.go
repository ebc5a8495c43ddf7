package replication_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/postgres"
)

// TestMixedCasePublication (issue 27, item 8): pgoutput reads
// publication_names as an identifier list, so the bare name of a
// mixed-case publication (what START_REPLICATION sent) names a
// publication that does not exist (PostgreSQL 18 then decodes nothing,
// without an error); the name as QuoteIdent writes it, the
// way CREATE PUBLICATION was written, decodes the row.
func TestMixedCasePublication(t *testing.T) {
	admin := testbed.Admin(t)
	n := time.Now().UnixNano()
	table, slot, pub := fmt.Sprintf("mixedpub_%d", n), fmt.Sprintf("mixedpub_%d", n), fmt.Sprintf("Orders_Pub_%d", n)
	testbed.Exec(t, admin,
		fmt.Sprintf(`CREATE TABLE public.%s (id bigint PRIMARY KEY, payload text)`, table),
		fmt.Sprintf(`CREATE PUBLICATION %s FOR TABLE public.%s`, postgres.QuoteIdent(pub), table),
		fmt.Sprintf(`SELECT pg_create_logical_replication_slot('%s', 'pgoutput')`, slot),
		fmt.Sprintf(`INSERT INTO public.%s VALUES (1, 'hello')`, table),
	)
	t.Cleanup(func() {
		testbed.DropSlot(t, admin, slot)
		testbed.Exec(t, admin, `DROP PUBLICATION IF EXISTS `+postgres.QuoteIdent(pub), `DROP TABLE IF EXISTS public.`+table)
	})
	peek := func(names string) (int, error) {
		var count int
		err := admin.QueryRow(context.Background(), `SELECT count(*)::int FROM pg_logical_slot_peek_binary_changes($1, NULL, NULL,
			'proto_version', '1', 'publication_names', $2) WHERE get_byte(data, 0) = ascii('I')`, slot, names).Scan(&count)
		return count, err
	}
	if count, err := peek(postgres.QuoteIdent(pub)); err != nil || count != 1 {
		t.Errorf("publication_names %s: %d inserts, %v; want the one row", postgres.QuoteIdent(pub), count, err)
	}
	// PostgreSQL 18 skips a publication that does not exist with a
	// warning, and decodes nothing; older releases stop with an error
	// naming the folded name.
	if count, err := peek(pub); err == nil && count != 0 || err != nil && !strings.Contains(err.Error(), strings.ToLower(pub)) {
		t.Errorf("publication_names %s (bare): %d inserts, %v; want none, the server looking for %s", pub, count, err, strings.ToLower(pub))
	}
}
