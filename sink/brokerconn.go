package sink

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/apiversions"
	"github.com/segmentio/kafka-go/protocol/saslauthenticate"
	"github.com/segmentio/kafka-go/protocol/saslhandshake"
	"github.com/segmentio/kafka-go/sasl"
)

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
	ready := false
	defer func() {
		if !ready {
			_ = nc.Close()
		}
	}()
	deadline, _ := ctx.Deadline()
	_ = nc.SetDeadline(deadline)
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
	_ = nc.SetDeadline(time.Time{})
	ready = true
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
	pc.SetVersions(ver)
	return nil
}

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
