package kafkaread

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/apiversions"
	"github.com/segmentio/kafka-go/protocol/fetch"
	"github.com/segmentio/kafka-go/protocol/saslauthenticate"
	"github.com/segmentio/kafka-go/protocol/saslhandshake"
	"github.com/segmentio/kafka-go/sasl"
)

// ErrDecoderPanic: kafka-go's decoder panicked on a broker's answer. A
// record batch whose record count is negative does it
// (segmentio/kafka-go#1438, open): a broker, or whoever answers in its
// place, can end the process that reads. The reads of this package decode
// in the calling goroutine and turn such a panic into an error wrapping
// this one.
var ErrDecoderPanic = errors.New("kafka-go's decoder panicked on the broker's answer (a malformed record batch, such as a negative record count: segmentio/kafka-go#1438)")

// recoverDecoder, deferred by a function that decodes a broker's answer
// with kafka-go, turns a panic into an error wrapping ErrDecoderPanic and
// naming the partition and the offset read from.
func recoverDecoder(err *error, topic string, partition int, offset int64) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("reading %s/%d at offset %d: %w: %v", topic, partition, offset, ErrDecoderPanic, p)
	}
}

// FetchTransport is a kafka.RoundTripper for fetch requests of one
// partition, as kafkabatch.FetchCommitted sends them. kafka.Transport
// decodes answers in goroutines of its own, where a panic of kafka-go's
// decoder (ErrDecoderPanic) cannot be recovered and ends the process;
// FetchTransport decodes in the calling goroutine and returns the panic as
// an error. Each call asks the brokers, in turn until one answers, for the
// partition's leader, connects to it (Dialer's TLS and SASL), and closes
// the connection after the answer.
type FetchTransport struct {
	Brokers []string      // host:port of brokers to ask for the leader
	Dialer  *kafka.Dialer // TLS, SASL, timeouts; nil: kafka.DefaultDialer
}

// RoundTrip sends req, a *fetch.Request of one partition, to the
// partition's leader and returns its answer. addr is not used: the leader
// is looked up from Brokers.
func (t *FetchTransport) RoundTrip(ctx context.Context, _ net.Addr, req protocol.Message) (res protocol.Message, err error) {
	f, ok := req.(*fetch.Request)
	if !ok || len(f.Topics) != 1 || len(f.Topics[0].Partitions) != 1 {
		return nil, fmt.Errorf("kafkaread: FetchTransport sends fetch requests of one partition, not %T", req)
	}
	topic, part := f.Topics[0].Topic, f.Topics[0].Partitions[0]
	d := Reader{Dialer: t.Dialer}.dialer()
	leader, err := t.lookupLeader(ctx, d, topic, int(part.Partition))
	if err != nil {
		return nil, err
	}
	pc, err := connect(ctx, d, net.JoinHostPort(leader.Host, strconv.Itoa(leader.Port)))
	if err != nil {
		return nil, fmt.Errorf("kafkaread: connecting to the leader of %s/%d: %w", topic, part.Partition, err)
	}
	defer pc.Close()
	defer recoverDecoder(&err, topic, int(part.Partition), part.FetchOffset)
	if deadline, ok := ctx.Deadline(); ok {
		_ = pc.SetDeadline(deadline)
	}
	return pc.RoundTrip(req)
}

// lookupLeader asks each of t.Brokers in turn for the leader of
// topic/partition; the error names every broker's failure.
func (t *FetchTransport) lookupLeader(ctx context.Context, d *kafka.Dialer, topic string, partition int) (kafka.Broker, error) {
	if len(t.Brokers) == 0 {
		return kafka.Broker{}, fmt.Errorf("kafkaread: looking up the leader of %s/%d: no broker", topic, partition)
	}
	var errs []error
	for _, b := range t.Brokers {
		leader, err := d.LookupLeader(ctx, "tcp", b, topic, partition)
		if err == nil {
			return leader, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", b, err))
		if ctx.Err() != nil {
			break
		}
	}
	return kafka.Broker{}, fmt.Errorf("kafkaread: looking up the leader of %s/%d: %w", topic, partition, errors.Join(errs...))
}

// connect opens a protocol connection to addr as kafka.Transport does: TLS
// when the dialer has it, the API versions both sides support, then SASL.
func connect(ctx context.Context, d *kafka.Dialer, addr string) (pc *protocol.Conn, err error) {
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = readTimeout
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dial := d.DialFunc
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	nc, err := dial(dctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			nc.Close()
		}
	}()
	host, portText, _ := net.SplitHostPort(addr)
	if d.TLS != nil {
		cfg := d.TLS.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName = host
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(dctx); err != nil {
			return nil, fmt.Errorf("TLS handshake: %w", err)
		}
		nc = tc
	}
	pc = protocol.NewConn(nc, d.ClientID)
	_ = pc.SetDeadline(time.Now().Add(timeout))
	m, err := pc.RoundTrip(new(apiversions.Request))
	if err != nil {
		return nil, fmt.Errorf("negotiating API versions: %w", err)
	}
	av := m.(*apiversions.Response)
	if av.ErrorCode != 0 {
		return nil, fmt.Errorf("negotiating API versions: %w", kafka.Error(av.ErrorCode))
	}
	versions := make(map[protocol.ApiKey]int16, len(av.ApiKeys))
	for _, k := range av.ApiKeys {
		versions[protocol.ApiKey(k.ApiKey)] = protocol.ApiKey(k.ApiKey).SelectVersion(k.MinVersion, k.MaxVersion)
	}
	pc.SetVersions(versions)
	if d.SASLMechanism != nil {
		port, _ := strconv.Atoi(portText)
		if err := authenticate(sasl.WithMetadata(ctx, &sasl.Metadata{Host: host, Port: port}), pc, d.SASLMechanism); err != nil {
			return nil, fmt.Errorf("SASL %s: %w", d.SASLMechanism.Name(), err)
		}
	}
	_ = pc.SetDeadline(time.Time{})
	return pc, nil
}

// authenticate runs the SASL handshake and exchange on pc, as kafka.Transport
// and the sink's connections (sink/wire.go) do.
func authenticate(ctx context.Context, pc *protocol.Conn, mech sasl.Mechanism) error {
	m, err := pc.RoundTrip(&saslhandshake.Request{Mechanism: mech.Name()})
	if err != nil {
		return err
	}
	if code := m.(*saslhandshake.Response).ErrorCode; code != 0 {
		return kafka.Error(code)
	}
	sess, state, err := mech.Start(ctx)
	if err != nil {
		return err
	}
	for done := false; !done; {
		m, err := pc.RoundTrip(&saslauthenticate.Request{AuthBytes: state})
		if errors.Is(err, io.EOF) {
			// A broker may end a failed exchange by closing the connection.
			return kafka.SASLAuthenticationFailed
		}
		if err != nil {
			return err
		}
		res := m.(*saslauthenticate.Response)
		if res.ErrorCode != 0 && res.ErrorMessage != "" {
			return fmt.Errorf("%w: %s", kafka.Error(res.ErrorCode), res.ErrorMessage)
		}
		if res.ErrorCode != 0 {
			return kafka.Error(res.ErrorCode)
		}
		if done, state, err = sess.Next(ctx, res.AuthBytes); err != nil {
			return err
		}
	}
	return nil
}
