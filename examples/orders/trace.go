package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/outboxrelay/outboxrelay/internal/tracing"
)

// startTracing is the command's tracer provider from the standard OTEL_*
// environment, as the relay reads it (OTEL_EXPORTER_OTLP_ENDPOINT; none
// set: nil, no spans). service is service.name unless OTEL_SERVICE_NAME
// says otherwise. The returned stop exports what is queued.
func startTracing(ctx context.Context, service string) (trace.TracerProvider, func(), error) {
	s, err := tracing.Read(os.Getenv)
	if err != nil {
		return nil, nil, err
	}
	tp, err := tracing.New(ctx, s, service, "example")
	if err != nil || tp == nil {
		return nil, func() {}, err
	}
	fmt.Fprintf(os.Stderr, "%s: tracing on (OTLP %s)\n", service, s.Exporter)
	return tp, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tp.Shutdown(sctx); err != nil {
			fmt.Fprintf(os.Stderr, "%s: exporting the last spans: %v\n", service, err)
		}
	}, nil
}
