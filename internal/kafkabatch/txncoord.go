package kafkabatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
)

// coordConn is the producer's own connection to its transaction
// coordinator (TxnProducerConfig.Dial), nil pc when none is open.
type coordConn struct {
	pc   *protocol.Conn
	addr string
	used time.Time // when the last request on pc ended
}

// coordIdle: a coordinator connection unused this long is closed and
// dialed again rather than written to (brokers close idle connections
// after connections.max.idle.ms, 10 minutes by default).
const coordIdle = 30 * time.Second

// coordTimeout bounds a request on the coordinator connection when
// neither ctx nor the client has a deadline.
const coordTimeout = 30 * time.Second

func (c *coordConn) drop() {
	if c.pc != nil {
		_ = c.pc.Close()
	}
	c.pc = nil
}

// txnRoundTrip sends msg, a request for the transaction coordinator, and
// returns its answer. kafka-go's Transport asks FindCoordinator before
// every such request (a round trip more each time, two per Kafka
// transaction); with TxnProducerConfig.Dial the producer keeps a connection to
// the coordinator instead, found once, and found again after an answer
// saying it moved (dropCoordinator) or a broken connection.
func (p *TxnProducer) txnRoundTrip(ctx context.Context, msg protocol.Message) (protocol.Message, error) {
	if p.cfg.Dial == nil {
		return p.transport().RoundTrip(ctx, p.client.Addr, msg)
	}
	c := &p.coord
	if c.pc != nil && time.Since(c.used) > coordIdle {
		c.drop()
	}
	if c.pc == nil {
		if err := p.dialCoordinator(ctx); err != nil {
			return nil, err
		}
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(cmp.Or(p.client.Timeout, coordTimeout))
	}
	pc := c.pc
	_ = pc.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = pc.SetDeadline(time.Unix(1, 0)) })
	m, err := pc.RoundTrip(msg)
	interrupted := !stop()
	c.used = time.Now()
	if err != nil || interrupted {
		c.drop()
	}
	if err != nil {
		return nil, fmt.Errorf("kafkabatch: transaction coordinator %s: %w", c.addr, err)
	}
	return m, nil
}

// dialCoordinator finds the transactional id's coordinator and connects.
func (p *TxnProducer) dialCoordinator(ctx context.Context) error {
	res, err := p.client.FindCoordinator(ctx, &kafka.FindCoordinatorRequest{Key: p.cfg.TransactionalID, KeyType: kafka.CoordinatorKeyTypeTransaction})
	if err != nil {
		return fmt.Errorf("kafkabatch: finding the transaction coordinator: %w", err)
	}
	if res.Error != nil {
		return res.Error // COORDINATOR_NOT_AVAILABLE and such: retried
	}
	if res.Coordinator == nil {
		return errors.New("kafkabatch: FindCoordinator answered no coordinator")
	}
	addr := net.JoinHostPort(res.Coordinator.Host, strconv.Itoa(res.Coordinator.Port))
	pc, err := p.cfg.Dial(ctx, addr)
	if err != nil {
		return fmt.Errorf("kafkabatch: connecting to the transaction coordinator %s: %w", addr, err)
	}
	p.coord = coordConn{pc: pc, addr: addr, used: time.Now()}
	return nil
}

// dropCoordinator forgets the coordinator after an answer saying it is
// not (or no longer) the one: the retry finds it again.
func (p *TxnProducer) dropCoordinator(err error) {
	if errors.Is(err, kafka.NotCoordinatorForGroup) || errors.Is(err, kafka.GroupCoordinatorNotAvailable) {
		p.coord.drop()
	}
}

// Close closes the producer's coordinator connection, if any. The
// producer may be used again after it (it dials again).
func (p *TxnProducer) Close() error {
	p.coord.drop()
	return nil
}
