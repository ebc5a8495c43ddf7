package sink

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/apiversions"
	metadataAPI "github.com/segmentio/kafka-go/protocol/metadata"
	"github.com/segmentio/kafka-go/protocol/produce"
	"github.com/segmentio/kafka-go/protocol/rawproduce"
	"github.com/segmentio/kafka-go/protocol/saslauthenticate"
	"github.com/segmentio/kafka-go/protocol/saslhandshake"
	"github.com/segmentio/kafka-go/sasl"

	"github.com/outboxrelay/outboxrelay/internal/kafkabatch"
	"github.com/outboxrelay/outboxrelay/internal/rawconn"
)

// produceRaw is the at-least-once producer's one way onto the wire: it
// sends batch, one record batch as kafkabatch.Encode writes it, to tp's
// leader with acks=all, and returns the offset the broker wrote it at
// once it did. The error
// is the request's (network, timeout, no leader known) or the partition's
// answer, a kafka.Error such as NOT_LEADER_OR_FOLLOWER,
// so retryable, staleLeader and unknownPartition decide on it as before.
//
// The request goes over tp's own connection to its leader (leaderConn),
// written and read by the calling goroutine: the partition worker, the only
// caller for tp (one batch in flight per partition). kafka-go's Transport
// hands each request to a connection goroutine and the answer back, four
// goroutine hand-offs per produce request; this path has none. Metadata
// (the leader's address) still comes from kafka-go's Client. A broken
// connection, a timeout or an answer saying the leader moved drops the
// connection, and the worker's retry loop dials the leader afresh.
//
// batch is only read until produceRaw returns (the request is written
// whole, or the connection dropped, before it does); the caller reuses it
// for a retry (the same bytes, so an idempotent batch keeps its sequence),
// and its memory for the next batch once every attempt ended.
func (p *Producer) produceRaw(ctx context.Context, tp topicPartition, batch []byte) (int64, error) {
	c := p.wire.get(tp)
	if c.pc != nil && time.Since(c.used) > p.wire.idleTimeout() {
		c.drop() // the broker may have closed it (connections.max.idle.ms)
	}
	if c.pc == nil {
		if err := p.connectLeader(ctx, tp, c); err != nil {
			return -1, fmt.Errorf("sink: producing to %s/%d: %w", tp.topic, tp.partition, err)
		}
	}
	res, err := c.produce(ctx, tp, batch)
	if err != nil {
		c.drop()
		return -1, fmt.Errorf("sink: producing to %s/%d: %w", tp.topic, tp.partition, err)
	}
	err = kafkabatch.PartitionAnswer(res, tp.topic, tp.partition)
	if err != nil && !errors.Is(err, kafka.DuplicateSequenceNumber) {
		// The broker may no longer lead tp and answer something else than
		// NOT_LEADER_OR_FOLLOWER (a deposed leader whose log dir went
		// offline answers KAFKA_STORAGE_ERROR for ever): the retry looks
		// the leader up again, in metadata fetched afresh, and dials it.
		// Refusals are rare; a redial costs nothing on the happy path.
		c.drop()
		if retryable(err) {
			p.refreshMetadata()
		}
	}
	if err != nil {
		return -1, err
	}
	return kafkabatch.BaseOffset(res, tp.topic, tp.partition), nil
}

// wireConns holds each partition's leaderConn. Its lock guards only the
// map: a leaderConn is used by its partition's worker alone.
type wireConns struct {
	mu   sync.Mutex
	m    map[topicPartition]*leaderConn
	idle time.Duration // 0: idleConnTimeout; tests shorten it
}

func (w *wireConns) idleTimeout() time.Duration {
	if w.idle > 0 {
		return w.idle
	}
	return idleConnTimeout
}

func (w *wireConns) get(tp topicPartition) *leaderConn {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.m[tp]
	if c == nil {
		if w.m == nil {
			w.m = make(map[topicPartition]*leaderConn)
		}
		c = &leaderConn{}
		w.m[tp] = c
	}
	return c
}

// closeAll closes every partition's connection, once the workers that use
// them have stopped (Close): Close returns with none of them open.
func (w *wireConns) closeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.m {
		c.drop()
	}
}

// idleConnTimeout: a connection unused this long is closed and dialed
// again rather than written to. Brokers close connections idle for
// connections.max.idle.ms (default 10 minutes); a request on one they
// closed would fail, be logged and wait a backoff. kafka-go's Transport
// closes its idle connections after 30 s by default, too.
const idleConnTimeout = 30 * time.Second

// leaderConn is one partition's connection to its leader, nil pc when
// none is open. The producer's context ending closes it, interrupting a
// request in flight, and Close drops it once the workers have stopped.
type leaderConn struct {
	pc   *protocol.Conn
	used time.Time            // when the last request on pc ended
	stop func() bool          // stops the AfterFunc that closes pc when the producer closes
	rs   kafkabatch.RecordSet // the request's records field
	// The produce request, reused: one topic, one partition.
	req   rawproduce.Request
	topic [1]rawproduce.RequestTopic
	part  [1]rawproduce.RequestPartition
}

func (c *leaderConn) drop() {
	if c.pc == nil {
		return
	}
	c.stop()
	_ = c.pc.Close()
	c.pc, c.stop = nil, nil
}

// produce writes one produce request and reads its answer on c. ctx bounds
// both: its deadline (DefaultRequestTimeout from now when it has none) is
// the connection's, the broker's acks timeout is a margin less
// (ackTimeout), and its end interrupts them.
func (c *leaderConn) produce(ctx context.Context, tp topicPartition, batch []byte) (*produce.Response, error) {
	c.rs.Reset(batch)
	defer c.rs.Reset(nil) // keep no reference to batch
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(DefaultRequestTimeout)
	}
	timeout := ackTimeout(time.Until(deadline))
	// The request lives in c, reused: RoundTrip is done with it on return.
	c.part[0] = rawproduce.RequestPartition{Partition: int32(tp.partition), RecordSet: protocol.RawRecordSet{Reader: &c.rs}}
	c.topic[0] = rawproduce.RequestTopic{Topic: tp.topic, Partitions: c.part[:]}
	c.req = rawproduce.Request{Acks: int16(kafka.RequireAll), Timeout: int32(timeout.Milliseconds()), Topics: c.topic[:]}
	req := &c.req
	_ = c.pc.SetDeadline(deadline)
	pc := c.pc
	stop := context.AfterFunc(ctx, func() { _ = pc.SetDeadline(time.Unix(1, 0)) })
	m, err := c.pc.RoundTrip(req)
	c.used = time.Now()
	if !stop() {
		// ctx ended: the deadline is in the past, or about to be.
		if err != nil {
			return nil, fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		defer c.drop()
	}
	if err != nil {
		return nil, err
	}
	res, ok := m.(*produce.Response)
	if !ok {
		return nil, fmt.Errorf("the broker answered a produce request with %T", m)
	}
	return res, nil
}

// ackTimeout is the acks timeout a produce request gives the broker when
// the client waits d for the answer: a margin (a tenth, at most 1 s) less,
// so that the broker's REQUEST_TIMED_OUT answer arrives before the client's
// deadline and the connection is kept instead of dropped and dialed again.
func ackTimeout(d time.Duration) time.Duration {
	return max(d-min(time.Second, d/10), time.Millisecond)
}

// connectLeader opens c to tp's leader, as kafka-go's cached metadata
// names it.
func (p *Producer) connectLeader(ctx context.Context, tp topicPartition, c *leaderConn) error {
	addr, err := p.leaderAddr(ctx, tp)
	if errors.Is(err, protocol.ErrNoTopic) || errors.Is(err, protocol.ErrNoPartition) || errors.Is(err, kafka.UnknownTopicOrPartition) ||
		errors.Is(err, protocol.ErrNoLeader) || errors.Is(err, kafka.LeaderNotAvailable) {
		// A topic created a moment ago may not be in the cache yet, and a
		// partition with no leader in it is being moved: without a refresh
		// the retry would read the same cache until kafka-go's TTL passes.
		p.refreshMetadata()
		addr, err = p.leaderAddr(ctx, tp)
	}
	if err != nil {
		return err
	}
	pc, err := p.dialBroker(ctx, addr)
	if err != nil {
		p.refreshMetadata() // the leader may have moved: look again on the retry
		return err
	}
	c.pc, c.used = pc, time.Now()
	c.stop = context.AfterFunc(p.ctx, func() { _ = pc.Close() })
	return nil
}

// leaderAddr looks tp's leader up in kafka-go's metadata.
func (p *Producer) leaderAddr(ctx context.Context, tp topicPartition) (string, error) {
	r, err := p.transport.RoundTrip(ctx, p.client.Addr, &metadataAPI.Request{TopicNames: []string{tp.topic}})
	if err != nil {
		return "", fmt.Errorf("fetching metadata of topic %q: %w", tp.topic, err)
	}
	res := r.(*metadataAPI.Response)
	for _, t := range res.Topics {
		if t.Name != tp.topic {
			continue
		}
		if t.ErrorCode != 0 {
			return "", fmt.Errorf("metadata of topic %q: %w", tp.topic, kafka.Error(t.ErrorCode))
		}
		for _, part := range t.Partitions {
			if int(part.PartitionIndex) != tp.partition {
				continue
			}
			for _, b := range res.Brokers {
				if b.NodeID == part.LeaderID {
					return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), nil
				}
			}
			if part.ErrorCode != 0 {
				return "", fmt.Errorf("metadata of %s/%d: %w", tp.topic, tp.partition, kafka.Error(part.ErrorCode))
			}
			return "", fmt.Errorf("metadata of %s/%d: leader %d: %w", tp.topic, tp.partition, part.LeaderID, protocol.NewErrNoLeader(tp.topic, part.PartitionIndex))
		}
		return "", protocol.NewErrNoPartition(tp.topic, int32(tp.partition))
	}
	return "", protocol.NewErrNoTopic(tp.topic)
}

// roundTripOnce sends one request on a connection of its own to the
// broker at addr, closed afterwards: for rare requests (once at start, or
// from check) that must not go through kafka-go's Transport.
func (p *Producer) roundTripOnce(ctx context.Context, addr string, req protocol.Message) (protocol.Message, error) {
	pc, err := p.dialBroker(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer pc.Close()
	deadline, _ := ctx.Deadline()
	_ = pc.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = pc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	return pc.RoundTrip(req)
}

// dialBroker opens a connection to the broker at addr as kafka-go's
// Transport does (kafka-go's transport.go, connGroup.connect): TCP, TLS
// when configured, ApiVersions, then SASL when configured. It is ready for
// requests when it returns.
func (p *Producer) dialBroker(ctx context.Context, addr string) (*protocol.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, p.transport.DialTimeout)
	defer cancel()
	dial := p.transport.Dial // set by tests that break connections
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to broker %s: %w", addr, err)
	}
	nc = rawconn.Wrap(nc) // reads and writes without waking the runtime's monitor (internal/rawconn)
	ready := false
	defer func() {
		if !ready {
			_ = nc.Close()
		}
	}()
	deadline, _ := ctx.Deadline()
	_ = nc.SetDeadline(deadline)
	// ctx ending (Close) interrupts ApiVersions and SASL too, not only the
	// TCP dial and the TLS handshake: the deadline moves to the past.
	interrupt := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	defer interrupt()
	pc, err := p.handshake(ctx, nc, addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		return nil, err
	}
	if !interrupt() {
		return nil, fmt.Errorf("connecting to broker %s: %w", addr, ctx.Err())
	}
	_ = nc.SetDeadline(time.Time{})
	ready = true
	return pc, nil
}

// handshake readies nc, a new connection to the broker at addr, for
// requests: TLS when configured, ApiVersions, then SASL when configured.
func (p *Producer) handshake(ctx context.Context, nc net.Conn, addr string) (*protocol.Conn, error) {
	host, port, _ := net.SplitHostPort(addr)
	if tc := p.transport.TLS; tc != nil {
		if tc.ServerName == "" {
			tc = tc.Clone()
			tc.ServerName = host
		}
		tlsConn := tls.Client(nc, tc)
		if err := tlsConn.HandshakeContext(ctx); err != nil {
			return nil, fmt.Errorf("TLS handshake with broker %s: %w", addr, err)
		}
		nc = tlsConn
	}
	pc := protocol.NewConn(nc, p.transport.ClientID)
	if err := negotiateVersions(pc); err != nil {
		return nil, fmt.Errorf("negotiating API versions with broker %s: %w", addr, err)
	}
	if m := p.transport.SASL; m != nil {
		portNum, _ := strconv.Atoi(port)
		if err := authenticateSASL(sasl.WithMetadata(ctx, &sasl.Metadata{Host: host, Port: portNum}), pc, m); err != nil {
			return nil, fmt.Errorf("SASL %s authentication with broker %s: %w", m.Name(), addr, err)
		}
	}
	return pc, nil
}

// negotiateVersions asks the broker which API versions it speaks and sets
// pc to the highest each side knows.
func negotiateVersions(pc *protocol.Conn) error {
	r, err := pc.RoundTrip(new(apiversions.Request))
	if err != nil {
		return err
	}
	res := r.(*apiversions.Response)
	if res.ErrorCode != 0 {
		return kafka.Error(res.ErrorCode)
	}
	ver := make(map[protocol.ApiKey]int16, len(res.ApiKeys))
	for _, k := range res.ApiKeys {
		key := protocol.ApiKey(k.ApiKey)
		ver[key] = key.SelectVersion(k.MinVersion, k.MaxVersion)
	}
	if v, ok := ver[protocol.Produce]; !ok || v < minProduceVersion {
		if !ok {
			v = -1
		}
		return fmt.Errorf("%w: the broker speaks Produce up to v%d; record batches (message format v2, as the relay writes them) need Produce v%d, Kafka 0.11 or later",
			kafka.UnsupportedVersion, v, minProduceVersion)
	}
	pc.SetVersions(ver)
	return nil
}

// minProduceVersion is the first Produce version that carries record
// batches (message format v2, KIP-98): kafkabatch writes nothing else.
const minProduceVersion = 3

// authenticateSASL runs the SASL exchange on pc: SaslHandshake naming the
// mechanism, then SaslAuthenticate until the mechanism completes.
func authenticateSASL(ctx context.Context, pc *protocol.Conn, m sasl.Mechanism) error {
	r, err := pc.RoundTrip(&saslhandshake.Request{Mechanism: m.Name()})
	if err != nil {
		return err
	}
	if code := r.(*saslhandshake.Response).ErrorCode; code != 0 {
		return kafka.Error(code)
	}
	sess, state, err := m.Start(ctx)
	if err != nil {
		return err
	}
	for done := false; !done; {
		r, err := pc.RoundTrip(&saslauthenticate.Request{AuthBytes: state})
		if errors.Is(err, io.EOF) {
			// A broker may end a failed exchange by closing the connection.
			return kafka.SASLAuthenticationFailed
		}
		if err != nil {
			return err
		}
		res := r.(*saslauthenticate.Response)
		if res.ErrorCode != 0 {
			if res.ErrorMessage != "" {
				return fmt.Errorf("%w: %s", kafka.Error(res.ErrorCode), res.ErrorMessage)
			}
			return kafka.Error(res.ErrorCode)
		}
		if done, state, err = sess.Next(ctx, res.AuthBytes); err != nil {
			return err
		}
	}
	return nil
}
