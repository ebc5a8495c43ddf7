package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/outboxrelay/outboxrelay/capture"
)

// The HTTP server's bounds: connections held (httplimit.go closes the
// oldest idle one for a new one), handlers running at once (the others
// get 503). The probes and a scraper need a few; the bounds keep a crowd
// of idle or slow connections from growing memory and file descriptors.
const (
	httpMaxConns    = 64
	httpMaxHandlers = 8
)

// serveHTTP listens on addr at once (so a taken port fails the start, not
// some later moment) and serves /metrics, /healthz and /readyz until ctx
// ends. Nothing else is served. /readyz answers from st. Every connection
// is bounded in time (timeouts for the header, the request, the answer and
// idling) and in number (httpMaxConns, httpMaxHandlers). It returns the
// bound address and a function that waits for the server to stop.
func serveHTTP(ctx context.Context, addr string, m *metrics, st *status, log *slog.Logger) (string, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("--http-addr %q: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, EnableOpenMetrics: true}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		ok, why := st.ready(time.Now())
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(w, why)
	})
	srv := &http.Server{
		Handler:           limitHandlers(mux, httpMaxHandlers),
		ConnContext:       connContext,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second, // no endpoint reads a body
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       30 * time.Second, // Prometheus scrapes every 15 to 60 s
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(limitConns(ln, httpMaxConns)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("http: serving /metrics, /healthz, /readyz", "addr", ln.Addr().String())
	return ln.Addr().String(), func() { <-done }, nil
}

// pingKafka asks Kafka every interval whether it answers, so readiness
// reflects Kafka also while the outbox is idle and nothing is produced.
func pingKafka(ctx context.Context, ping func(context.Context) error, st *status, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, interval)
		err := ping(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		st.kafkaAnswered(err == nil)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// logProgress writes one info line every interval: the publish rate, the
// lag and the confirmed LSN. State changes are logged where they happen.
func logProgress(ctx context.Context, m *metrics, st *status, log *slog.Logger, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	last, lastAt := m.events.Load(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			events := m.events.Load()
			rate := float64(events-last) / now.Sub(lastAt).Seconds()
			last, lastAt = events, now
			records, bytes := m.inFlightNow()
			log.Info("progress",
				"state", st.State(),
				"events_per_second", roundTo(rate, 1),
				"events_total", events,
				"lag_bytes", m.lagBytes(),
				"lag_seconds", roundTo(m.lagSeconds(now), 3),
				"confirmed_lsn", capture.LSN(m.confirmed.Load()).String(),
				"in_flight_records", records,
				"in_flight_bytes", bytes)
		}
	}
}

func roundTo(v float64, decimals int) float64 {
	p := 1.0
	for range decimals {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}
