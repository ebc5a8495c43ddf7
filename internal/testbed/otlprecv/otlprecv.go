// Package otlprecv is an in-process OTLP/gRPC trace receiver for tests: the
// real collector protocol (go.opentelemetry.io/proto/otlp) on 127.0.0.1,
// keeping every span it is sent, so a test can point a relay's
// OTEL_EXPORTER_OTLP_ENDPOINT at it and assert the spans.
package otlprecv

import (
	"context"
	"encoding/hex"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// Span is one received span with its resource's service.name.
type Span struct {
	Service string
	*tracepb.Span
}

// TraceID and SpanID and ParentID are the ids in hex ("" for none).
func (s Span) TraceID() string  { return hex.EncodeToString(s.Span.TraceId) }
func (s Span) SpanID() string   { return hex.EncodeToString(s.Span.SpanId) }
func (s Span) ParentID() string { return hex.EncodeToString(s.Span.ParentSpanId) }

// Attr is the attribute key's value as text ("" when missing): strings as
// they are, integers in decimal, booleans as true or false.
func (s Span) Attr(key string) string {
	for _, kv := range s.Attributes {
		if kv.Key != key {
			continue
		}
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			return v.StringValue
		case *commonpb.AnyValue_IntValue:
			return strconv.FormatInt(v.IntValue, 10)
		case *commonpb.AnyValue_BoolValue:
			return strconv.FormatBool(v.BoolValue)
		}
		return kv.Value.String()
	}
	return ""
}

// Receiver is a running receiver.
type Receiver struct {
	// Endpoint is the address for OTEL_EXPORTER_OTLP_ENDPOINT
	// ("http://127.0.0.1:port", with OTEL_EXPORTER_OTLP_PROTOCOL=grpc).
	Endpoint string
	mu       sync.Mutex
	spans    []Span
	coltracepb.UnimplementedTraceServiceServer
}

// Start runs a receiver until the test ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{Endpoint: "http://" + ln.Addr().String()}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, r)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return r
}

// Export implements the OTLP trace service: it keeps the request's spans.
func (r *Receiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, Span{Service: service, Span: s})
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Wait polls until cond holds for the spans received, or timeout passes
// (then it fails the test).
func (r *Receiver) Wait(t testing.TB, timeout time.Duration, what string, cond func([]Span) bool) []Span {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		spans := r.Spans()
		if cond(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("otlprecv: %d spans after %s, still waiting for %s", len(spans), timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
