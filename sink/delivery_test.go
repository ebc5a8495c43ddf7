package sink

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"testing"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/internal/certerr"
	"github.com/outboxrelay/outboxrelay/internal/terminal"
	"github.com/outboxrelay/outboxrelay/relay"
)

// TestDeliveryErrorsMarked: a record too large for Kafka is rejected as
// poison (relay.ErrRecordRejected), and a certificate that does not verify
// is final.
func TestDeliveryErrorsMarked(t *testing.T) {
	if err := Marked(fmt.Errorf("sink: %w", ErrRecordTooLarge)); !errors.Is(err, relay.ErrRecordRejected) {
		t.Errorf("too large: %v; want relay.ErrRecordRejected", err)
	}
	cert := fmt.Errorf("dial: %w", x509.UnknownAuthorityError{})
	if !certerr.Failed(cert) || !terminal.IsFinal(markCert(cert)) {
		t.Error("a certificate that does not verify must be final")
	}
	if other := errors.New("connection refused"); terminal.IsFinal(markCert(other)) || markCert(other) != other {
		t.Error("markCert marked an error that is not a certificate's")
	}
	if markCert(nil) != nil {
		t.Error("markCert(nil) is not nil")
	}
	// Regression (issue 26 review): markCert re-marked an aborted Kafka
	// transaction whose cause is a certificate (a session error, retried)
	// as final, so the relay stopped where the old retry rule resumed.
	aborted := terminal.Session(fmt.Errorf("transaction aborted: %w", cert))
	if got := Marked(aborted); !terminal.IsSession(got) || terminal.IsFinal(got) {
		t.Errorf("an aborted transaction caused by a certificate: final %v, session %v; want it to stay a session error", terminal.IsFinal(got), terminal.IsSession(got))
	}
}

// TestAtLeastOnceWithoutOffsets: with no offsets topic (poll mode) the
// delivery records nowhere and finds nothing, as the relay without a
// position store did.
func TestAtLeastOnceWithoutOffsets(t *testing.T) {
	d := NewAtLeastOnce(nil, nil)
	if pos, found, err := d.Open(context.Background(), relay.Opening{}); found || err != nil || pos != (relay.Recorded{}) {
		t.Errorf("Open = %+v, %v, %v; want nothing", pos, found, err)
	}
	acked := false
	if err := d.Record(context.Background(), 0x500, "", func(err error) { acked = err == nil }); err != nil || !acked {
		t.Errorf("Record: %v, acked %v; want an immediate ack", err, acked)
	}
	if d.Where() != "" || d.Forget() != "" {
		t.Errorf("Where %q, Forget %q; want both empty (recorded nowhere)", d.Where(), d.Forget())
	}
	ck := relay.NewCheckpoint(0x100)
	if d.Confirmable(ck, relay.Streaming{From: 0x100}) != capture.Progress(ck) {
		t.Error("at least once, the checkpoint is what may be confirmed")
	}
}
