package tracing

import (
	"context"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		env      map[string]string
		exporter string
		off      string // a part of Off
		err      string // a part of the error
	}{
		{env: nil, off: "no OTEL_EXPORTER_OTLP_ENDPOINT"},
		{env: map[string]string{EnvEndpoint: "http://127.0.0.1:4318"}, exporter: "http/protobuf"},
		{env: map[string]string{EnvTracesEndpoint: "http://127.0.0.1:4318/v1/traces"}, exporter: "http/protobuf"},
		{env: map[string]string{EnvEndpoint: "http://127.0.0.1:4317", EnvProtocol: "grpc"}, exporter: "grpc"},
		{env: map[string]string{EnvEndpoint: "x", EnvProtocol: "grpc", EnvTracesProtocol: "http/protobuf"}, exporter: "http/protobuf"},
		{env: map[string]string{EnvEndpoint: "x", EnvProtocol: "http/json"}, err: "OTEL_EXPORTER_OTLP_PROTOCOL=\"http/json\""},
		{env: map[string]string{EnvEndpoint: "x", EnvTracesProtocol: "thrift"}, err: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
		{env: map[string]string{EnvEndpoint: "x", EnvSDKDisabled: "TRUE"}, off: "OTEL_SDK_DISABLED"},
		{env: map[string]string{EnvEndpoint: "x", EnvSDKDisabled: "false"}, exporter: "http/protobuf"},
		{env: map[string]string{EnvEndpoint: "x", EnvTracesExporter: "none"}, off: "OTEL_TRACES_EXPORTER=none"},
		{env: map[string]string{EnvEndpoint: "x", EnvTracesExporter: "zipkin"}, err: "only otlp or none"},
	} {
		s, err := Read(func(k string) string { return tc.env[k] })
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want one naming %q", tc.env, err, tc.err)
			}
		case err != nil:
			t.Errorf("%v: %v", tc.env, err)
		case s.Exporter != tc.exporter || !strings.Contains(s.Off, tc.off):
			t.Errorf("%v: %+v, want exporter %q, off %q", tc.env, s, tc.exporter, tc.off)
		}
	}
}

func TestNewOff(t *testing.T) {
	p, err := New(context.Background(), Settings{Off: "no endpoint"}, DefaultServiceName, "v")
	if p != nil || err != nil {
		t.Fatalf("New with tracing off: %v, %v; want nil, nil", p, err)
	}
	Shutdown(nil, 0, nil) // a nil provider: nothing to do
}
