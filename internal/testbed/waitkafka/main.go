// Command waitkafka blocks until a Kafka broker answers a metadata request,
// so scripts/devenv returns only when the bed is usable. It gives up early
// when the broker process it was started for has exited.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"
)

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "bootstrap address")
	timeout := flag.Duration("timeout", 60*time.Second, "how long to wait")
	pid := flag.Int("pid", 0, "broker process id; stop waiting when it exits")
	flag.Parse()
	if err := wait(*brokers, *timeout, *pid); err != nil {
		fmt.Fprintln(os.Stderr, "waitkafka:", err)
		os.Exit(1)
	}
}

func wait(addr string, timeout time.Duration, pid int) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		if pid > 0 && syscall.Kill(pid, 0) != nil {
			return fmt.Errorf("broker process %d exited while waiting for %s", pid, addr)
		}
		if last = metadata(ctx, addr); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("no metadata answer from %s within %s", addr, timeout), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// metadata sends one metadata request and requires a controller to be known,
// which a KRaft node reports only once its quorum is up.
func metadata(ctx context.Context, addr string) error {
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := (&kafka.Dialer{Timeout: 2 * time.Second}).DialContext(dctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("dialing: %w", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Brokers(); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	if _, err := conn.Controller(); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	return nil
}
