package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/router"
)

// event binds a source row into the router's event, as the source yielded
// it (column text still aliases the source's frame: valid until the next
// Next), in the open transaction, whose commit LSN and time the event
// holds since its Begin.
func (s *session) event(row *capture.Row) *router.Event {
	ev := &s.ev
	ev.Row = row
	ev.ProcessedAt = time.Now()
	if row.Op == capture.OpRead {
		if s.snapRows++; s.snapRows%1000 == 0 {
			s.opt.Observer.SnapshotProgress(s.snapRows, false)
		}
	}
	return ev
}

// route turns an event into records and hands them to the delivery, inside
// the current transaction (or the snapshot's pseudo-transaction). A row the
// router rejects, or whose record the delivery refuses before sending, goes to
// the poison policy (invariant 4).
func (s *session) route(ctx context.Context, ev *router.Event) error {
	var err error
	s.records, err = s.opt.Router.Route(ev, s.records[:0])
	if err != nil {
		var rowErr *router.RowError
		if !errors.As(err, &rowErr) {
			return fmt.Errorf("routing row of %s at %s: %w", ev.Table(), ev.CommitLSN, err)
		}
		return s.poison(ctx, ev, rowErr)
	}
	if len(s.records) == 0 {
		s.skip(skipReason(ev.Row.Op))
		return nil
	}
	for i := range s.records {
		if err := s.send(ctx, ev, &s.records[i]); err != nil {
			return err
		}
	}
	return nil
}

// send hands one record to the delivery, counted in the transaction before it
// goes, so that its acknowledgement can never come first.
func (s *session) send(ctx context.Context, ev *router.Event, rec *router.Record) error {
	if s.opt.Convert != nil {
		if err := s.convert(ctx, ev, rec); err != nil {
			return s.unconvertible(ctx, ev, rec, err)
		}
	}
	var sp *eventSpan // nil unless tracing records the event (relay/trace.go)
	if s.opt.Tracing.Tracer != nil {
		sp = s.traced(ev, rec)
	}
	size := recordBytes(rec)
	if err := s.acquire(ctx, 1, size); err != nil {
		sp.end(err)
		return err
	}
	s.tx.Add(1)
	var ack func(error)
	if sp != nil {
		ack = s.tracedAckerFor(rec.Topic, size, len(rec.Key)+len(rec.Value), sp)
	} else {
		ack = s.ackerFor(rec.Topic, size, len(rec.Key)+len(rec.Value))
	}
	err := s.opt.Delivery.Send(ctx, rec, ack)
	if err == nil {
		return nil
	}
	err = fmt.Errorf("sending event %s (LSN %s, table %s) to %s: %w", rec.EventID, ev.CommitLSN, ev.Table(), rec.Topic, err)
	if errors.Is(err, ErrRecordRejected) && s.opt.Poison != nil {
		// The record's share of the budget and of the transaction now
		// waits for the poison policy's ack instead.
		cause := err
		if err = s.deadLetter(ctx, ev, rec, cause, size); err == nil {
			sp.deadLettered(cause)
			return nil
		}
	}
	sp.end(err)
	s.budget.Release(1, size) // the delivery did not take it: its ack will never come
	return err
}

// unconvertible hands a record the converter refused (a *ConvertError)
// to the poison policy, as the router wrote it; any other error stops.
func (s *session) unconvertible(ctx context.Context, ev *router.Event, rec *router.Record, err error) error {
	if !isConvertError(err) || s.opt.Poison == nil {
		return err
	}
	return s.counted(ctx, ev, rec, err, recordBytes(rec))
}

// poison hands a row the router rejected to the poison policy: with none
// it stops the relay (having confirmed everything before the row);
// otherwise the policy acks the row once it is dead-lettered or skipped.
func (s *session) poison(ctx context.Context, ev *router.Event, rowErr *router.RowError) error {
	if s.opt.Poison == nil || rowErr.Fatal {
		return rowErr
	}
	return s.counted(ctx, ev, nil, rowErr, poisonRowBytes(ev.Row))
}

// counted counts a poison row (one record of size bytes) in the budget
// and the transaction, and hands it to the poison policy.
func (s *session) counted(ctx context.Context, ev *router.Event, rec *router.Record, cause error, size int64) error {
	if err := s.acquire(ctx, 1, size); err != nil {
		return err
	}
	s.tx.Add(1)
	if err := s.deadLetter(ctx, ev, rec, cause, size); err != nil {
		s.budget.Release(1, size) // its ack will never come
		return err
	}
	return nil
}

// deadLetter runs the poison policy on a row whose share (one record of
// size bytes) is already counted in the budget and the transaction: it is
// dead-lettered, or skipped under errors.tolerance=all.
func (s *session) deadLetter(ctx context.Context, ev *router.Event, rec *router.Record, cause error, size int64) error {
	if err := s.opt.Poison(ctx, ev, rec, cause, s.ackerFor("", size, 0)); err != nil {
		return err
	}
	s.opt.Observer.DeadLettered()
	return nil
}

// poisonRowBytes is what a row's dead-letter record counts against the
// budget: the row (as rowJSON dumps it) and the error's headers, so that
// the producer's buffer never blocks.
func poisonRowBytes(row *capture.Row) int64 {
	size := int64(1024)
	if row.Op == capture.OpMessage {
		size += int64(2*(len(router.MessagePrefixColumn)+len(row.Prefix)) + 8)
		return size + int64(2*(len(router.MessageContentColumn)+len(row.Content))+8)
	}
	for _, c := range row.Columns {
		size += int64(2*(len(c.Name)+len(c.Text)) + 8) // JSON escapes
	}
	return size
}

// ackerFor returns the ack callback of one record: it gives back size
// bytes of budget and reports published key+value bytes to the observer. A
// poison row's ack (topic "") is not a publication and is not reported as
// one. The commit time reported is the open transaction's (from its
// Begin, as the router's event has it), read from the transaction rather
// than captured: the callback lives as long as its record is in flight,
// and smaller callbacks keep less memory (48 bytes, not 80).
func (s *session) ackerFor(topic string, size int64, published int) func(error) {
	tx := s.tx
	return func(err error) {
		s.budget.Release(1, size)
		tx.Ack(err)
		if err == nil && topic != "" {
			s.opt.Observer.Published(topic, published, tx.commitTime)
		}
	}
}

// acquire takes in-flight budget, keeping the source's server informed
// while it waits, so that a slow Kafka never looks like a dead client
// (wal_sender_timeout).
func (s *session) acquire(ctx context.Context, records int, bytes int64) error {
	for {
		ok, err := s.budget.Acquire(ctx, records, bytes, time.Second)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if err := s.ck.Err(); err != nil {
			return err
		}
		if err := s.st.KeepAlive(ctx); err != nil {
			return err
		}
	}
}

// heartbeat emits a heartbeat record to the heartbeat topic. It belongs to
// no transaction: its outcome never moves or holds the confirmed position,
// and a failed one only warrants a warning.
func (s *session) heartbeat(ctx context.Context, at time.Time) error {
	rec := s.opt.Router.Heartbeat(s.opt.HeartbeatTopic, at)
	if s.opt.Convert != nil {
		if err := s.convert(ctx, nil, &rec); err != nil {
			if !isConvertError(err) {
				return err
			}
			s.log.Warn("heartbeat not sent: the converter refused it", "topic", rec.Topic, "err", err)
			return nil
		}
	}
	size := recordBytes(&rec)
	if err := s.acquire(ctx, 1, size); err != nil {
		return err
	}
	err := s.opt.Delivery.Send(ctx, &rec, func(err error) {
		s.budget.Release(1, size)
		if err != nil {
			s.log.Warn("heartbeat not delivered", "topic", rec.Topic, "err", err)
		}
	})
	if err != nil {
		s.budget.Release(1, size)
	} else if s.tx == nil {
		s.opt.Delivery.End(0) // between transactions: it may commit alone
	}
	return err
}

func (s *session) skip(reason string) { s.opt.Observer.Skipped(reason) }

// recordBytes is what a record counts against MaxInFlightBytes: key,
// value, headers and a per-record allowance no smaller than what a Kafka
// producer counts for framing, so that a producer whose buffer is as large as
// the budget never has to block Send (a blocked Send would stop the
// answers to the server's keepalives).
func recordBytes(r *router.Record) int64 {
	n := int64(len(r.Key)+len(r.Value)) + 64
	for _, h := range r.Headers {
		n += int64(10 + len(h.Key) + len(h.Value))
	}
	return n
}

func skipReason(op capture.Op) string {
	switch op {
	case capture.OpUpdate:
		return "update"
	case capture.OpDelete:
		return "delete"
	}
	return "routed_to_nothing"
}
