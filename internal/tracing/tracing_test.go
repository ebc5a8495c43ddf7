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
		{env: map[string]string{EnvEndpoint: "http://c:4318", EnvProtocol: "grpc", EnvTracesProtocol: "http/protobuf"}, exporter: "http/protobuf"},
		{env: map[string]string{EnvEndpoint: "http://c:4318", EnvProtocol: "http/json"}, err: "OTEL_EXPORTER_OTLP_PROTOCOL=\"http/json\""},
		{env: map[string]string{EnvEndpoint: "http://c:4318", EnvTracesProtocol: "thrift"}, err: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
		{env: map[string]string{EnvEndpoint: "http://c:4318", EnvSDKDisabled: "TRUE"}, off: "OTEL_SDK_DISABLED"},
		{env: map[string]string{EnvEndpoint: "http://c:4318", EnvSDKDisabled: "false"}, exporter: "http/protobuf"},
		{env: map[string]string{EnvEndpoint: "http://c:4318", EnvTracesExporter: "none"}, off: "OTEL_TRACES_EXPORTER=none"},
		{env: map[string]string{EnvEndpoint: "http://c:4318", EnvTracesExporter: "zipkin"}, err: "only otlp or none"},
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

// Regression (issue 29 review): a bad OTEL_* value that the SDK or the
// exporter reads itself was only logged (outside slog) and replaced by a
// default, the relay starting anyway: OTEL_TRACES_SAMPLER_ARG=0,1 sampled
// every trace instead of one in ten, an unknown sampler or an endpoint
// that is not a URL fell back to the defaults. They are start-up errors.
func TestReadRefusesWhatTheSDKWouldReplace(t *testing.T) {
	ep := "http://c:4318"
	for _, tc := range []struct {
		env map[string]string
		err string
	}{
		{map[string]string{EnvEndpoint: ep, EnvSampler: "traceidratio", EnvSamplerArg: "0,1"}, `OTEL_TRACES_SAMPLER_ARG="0,1"`},
		{map[string]string{EnvEndpoint: ep, EnvSampler: "parentbased_traceidratio", EnvSamplerArg: "1.5"}, "from 0 to 1"},
		{map[string]string{EnvEndpoint: ep, EnvSampler: "bogus"}, `OTEL_TRACES_SAMPLER="bogus"`},
		{map[string]string{EnvEndpoint: "http://[::1"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{map[string]string{EnvTracesEndpoint: "otel-collector:4317"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
	} {
		if _, err := Read(func(k string) string { return tc.env[k] }); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: error %v, want one naming %q", tc.env, err, tc.err)
		}
	}
	for _, env := range []map[string]string{
		{EnvEndpoint: ep, EnvSampler: "traceidratio", EnvSamplerArg: "0.25"},
		{EnvEndpoint: ep, EnvSampler: "always_on", EnvSamplerArg: "anything"}, // the arg is not read
		{EnvEndpoint: "https://collector.example:4317", EnvSampler: "parentbased_always_off"},
	} {
		if _, err := Read(func(k string) string { return env[k] }); err != nil {
			t.Errorf("%v: %v", env, err)
		}
	}
}
