package check

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxrelay/outboxrelay/postgres"
	"github.com/outboxrelay/outboxrelay/replication"
	"github.com/outboxrelay/outboxrelay/router"

	"github.com/outboxrelay/outboxrelay/capture"
)

// maxPeekedChanges bounds what messages reads of the slot.
const maxPeekedChanges = 10000

// messages runs with DecodeLogicalDecodingMessageContent in transforms:
// the prefix lists, and, since there may be no table to sample, the
// messages waiting in the slot: peeked (not consumed) when the slot exists
// and no relay streams from it, decoded and routed as the relay would, so
// that their topics and sizes join the Kafka checks and a message the
// relay would stop at is found now.
func (c *checker) messages(ctx context.Context, slot replication.Slot) {
	if !c.pg.Messages {
		return
	}
	switch {
	case c.pg.MessageIncludeText != "":
		c.pass("message prefixes", "routed: prefixes matching message.prefix.include.list "+c.pg.MessageIncludeText+" (whole prefix, case-insensitive)")
	case c.pg.MessageExcludeText != "":
		c.pass("message prefixes", "routed: every prefix but message.prefix.exclude.list "+c.pg.MessageExcludeText+" (whole prefix, case-insensitive)")
	default:
		c.pass("message prefixes", "routed: every prefix (neither message.prefix.include.list nor message.prefix.exclude.list is set)")
	}
	switch {
	case !slot.Exists:
		c.pass("pending messages", "slot "+c.pg.Slot+" does not exist yet: messages are streamed from its creation on (there is no snapshot of messages)")
	case slot.Active:
		c.pass("pending messages", fmt.Sprintf("not read: a relay streams from slot %s (pid %d); the slot can be peeked only while idle", c.pg.Slot, slot.ActivePID))
	default:
		c.peekMessages(ctx)
	}
}

// peekMessages decodes up to maxPeekedChanges changes waiting in the idle
// slot and routes the messages among them.
func (c *checker) peekMessages(ctx context.Context) {
	rows, err := c.conn.Query(ctx, `SELECT lsn::text, data FROM pg_logical_slot_peek_binary_changes($1, NULL, $2,
		'proto_version', '1', 'publication_names', $3, 'messages', 'true')`, c.pg.Slot, maxPeekedChanges, postgres.QuoteIdent(c.pg.Publication))
	if err != nil {
		c.fail("pending messages", "peeking slot "+c.pg.Slot+": "+err.Error(), "")
		return
	}
	defer rows.Close()
	var msg replication.Message
	var read, routed, skipped int
	var refused, undecodable []string
	var records []router.Record
	row := &capture.Row{Op: capture.OpMessage}
	ev := &router.Event{Row: row, ProcessedAt: time.Now()}
	for rows.Next() {
		var lsn string
		var data []byte
		if err := rows.Scan(&lsn, &data); err != nil {
			c.fail("pending messages", err.Error(), "")
			return
		}
		read++
		if err := replication.Decode(data, &msg); err != nil {
			undecodable = append(undecodable, "at "+lsn+": "+err.Error())
			continue
		}
		if msg.Type != replication.MessageLogical {
			continue
		}
		l := &msg.Logical
		if !c.pg.IncludesMessage(l.Prefix) {
			skipped++
			continue
		}
		at, _ := capture.ParseLSN(lsn)
		row.Prefix, row.Content, ev.CommitLSN = l.Prefix, l.Content, at
		if records, err = c.rt.Route(ev, records[:0]); err != nil {
			refused = append(refused, err.Error())
			continue
		}
		routed++
		for _, r := range records {
			c.largest[r.Topic] = max(c.largest[r.Topic], recordSize(&r))
		}
	}
	if err := rows.Err(); err != nil {
		c.fail("pending messages", "peeking slot "+c.pg.Slot+": "+err.Error(), "")
		return
	}
	c.reportPending(fmt.Sprintf("%d routable and %d skipped by prefix among the first %d changes waiting in slot %s", routed, skipped, read, c.pg.Slot), refused, undecodable)
}

// reportPending reports what peekMessages found: a message the relay
// would stop at fails the check, under errors.tolerance=all it is only
// named (skipped or dead-lettered); a change that does not decode fails.
func (c *checker) reportPending(detail string, refused, undecodable []string) {
	if len(undecodable) > 0 {
		c.fail("pending messages", fmt.Sprintf("%s; %d changes do not decode, the first %s", detail, len(undecodable), undecodable[0]),
			"this is a bug in outboxrelay's pgoutput decoder or a server it does not know: report it with the server version")
		return
	}
	switch {
	case len(refused) > 0 && c.tolerateAll:
		c.pass("pending messages", fmt.Sprintf("%s; %d the relay will skip or dead-letter (errors.tolerance=all), the first: %s", detail, len(refused), refused[0]))
	case len(refused) > 0:
		c.fail("pending messages", fmt.Sprintf("%s; %d the relay would stop at (errors.tolerance=none), the first: %s", detail, len(refused), refused[0]),
			"emit JSON objects with the EventRouter's fields; to get past the ones waiting, set errors.tolerance=all (skipped, or dead-lettered with errors.deadletterqueue.topic.name)")
	default:
		c.pass("pending messages", detail)
	}
}

// recordSize is a record's key, value and header bytes.
func recordSize(r *router.Record) int {
	size := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		size += len(h.Key) + len(h.Value)
	}
	return size
}
