// Package tracing builds the binary's OpenTelemetry tracer provider from
// the standard OTEL_* environment: an OTLP exporter (gRPC or HTTP) behind
// the SDK's batch span processor, or none at all when no endpoint is set.
// The relay records its spans through it (relay.Tracing).
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The environment variables read here; the exporters and the SDK read the
// rest of the standard ones themselves (OTEL_EXPORTER_OTLP_HEADERS,
// _TIMEOUT, _INSECURE, _CERTIFICATE, OTEL_TRACES_SAMPLER(_ARG),
// OTEL_BSP_*, OTEL_RESOURCE_ATTRIBUTES).
const (
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvServiceName    = "OTEL_SERVICE_NAME"
	EnvSampler        = "OTEL_TRACES_SAMPLER"
	EnvSamplerArg     = "OTEL_TRACES_SAMPLER_ARG"
)

// sampler says whether name is a value of OTEL_TRACES_SAMPLER the SDK
// knows and whether its OTEL_TRACES_SAMPLER_ARG is a ratio.
func sampler(name string) (known, ratio bool) {
	switch name {
	case "always_on", "always_off", "parentbased_always_on", "parentbased_always_off":
		return true, false
	case "traceidratio", "parentbased_traceidratio":
		return true, true
	}
	return false, false
}

// DefaultServiceName is the relay's service.name without OTEL_SERVICE_NAME
// (or a service.name in OTEL_RESOURCE_ATTRIBUTES).
const DefaultServiceName = "outboxrelay"

// Settings is what the environment asks for; Exporter is "" when tracing
// is off.
type Settings struct {
	Exporter string // "grpc" or "http/protobuf"; "": off
	Off      string // why tracing is off, for the start-up log line
}

// Read decides from the environment (getenv: os.Getenv) whether tracing is
// on and over which protocol. Off when OTEL_SDK_DISABLED=true,
// OTEL_TRACES_EXPORTER=none, or neither OTEL_EXPORTER_OTLP_ENDPOINT nor
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set. The protocol is
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL,
// else http/protobuf (the specification's default); http/json is refused.
func Read(getenv func(string) string) (Settings, error) {
	if v := strings.TrimSpace(getenv(EnvSDKDisabled)); strings.EqualFold(v, "true") {
		return Settings{Off: EnvSDKDisabled + "=true"}, nil
	}
	switch v := strings.ToLower(strings.TrimSpace(getenv(EnvTracesExporter))); v {
	case "", "otlp":
	case "none":
		return Settings{Off: EnvTracesExporter + "=none"}, nil
	default:
		return Settings{}, fmt.Errorf("tracing: %s=%q: only otlp or none are supported", EnvTracesExporter, v)
	}
	if strings.TrimSpace(getenv(EnvTracesEndpoint)) == "" && strings.TrimSpace(getenv(EnvEndpoint)) == "" {
		return Settings{Off: "no " + EnvEndpoint + " set"}, nil
	}
	if err := checkEnv(getenv); err != nil {
		return Settings{}, err
	}
	key := EnvTracesProtocol
	proto := strings.TrimSpace(getenv(key))
	if proto == "" {
		key, proto = EnvProtocol, strings.TrimSpace(getenv(EnvProtocol))
	}
	switch proto {
	case "", "http/protobuf":
		return Settings{Exporter: "http/protobuf"}, nil
	case "grpc":
		return Settings{Exporter: "grpc"}, nil
	}
	return Settings{}, fmt.Errorf("tracing: %s=%q: use grpc or http/protobuf", key, proto)
}

// checkEnv refuses what the SDK and the exporters would only log and
// replace by a default, starting anyway: an unknown sampler, a ratio that
// is not a number from 0 to 1 (OTEL_TRACES_SAMPLER_ARG=0,1 sampled
// everything), an endpoint that is not a URL.
func checkEnv(getenv func(string) string) error {
	name := strings.TrimSpace(getenv(EnvSampler))
	known, ratio := sampler(name)
	if name != "" && !known {
		return fmt.Errorf("tracing: %s=%q: write one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio", EnvSampler, name)
	}
	if arg := strings.TrimSpace(getenv(EnvSamplerArg)); ratio && arg != "" {
		if f, err := strconv.ParseFloat(arg, 64); err != nil || f < 0 || f > 1 {
			return fmt.Errorf("tracing: %s=%q: write the sampled fraction, a number from 0 to 1 with a dot, e.g. 0.1", EnvSamplerArg, arg)
		}
	}
	for _, key := range []string{EnvEndpoint, EnvTracesEndpoint} {
		v := strings.TrimSpace(getenv(key))
		if v == "" {
			continue
		}
		if u, err := url.Parse(v); err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("tracing: %s=%q: write the collector's URL, e.g. http://otel-collector:4317 (grpc) or http://otel-collector:4318 (http/protobuf)", key, v)
		}
	}
	return nil
}

// Provider is the tracer provider of a run, nil when tracing is off.
type Provider = sdktrace.TracerProvider

// New builds the tracer provider the settings ask for, nil when tracing is
// off. The exporter connects lazily: an endpoint that does not answer
// costs dropped spans (logged by the SDK's error handler), never a
// failed start. service is service.name unless OTEL_SERVICE_NAME (or
// OTEL_RESOURCE_ATTRIBUTES) says otherwise; version is service.version.
func New(ctx context.Context, s Settings, service, version string) (*Provider, error) {
	var exp sdktrace.SpanExporter
	var err error
	switch s.Exporter {
	case "":
		return nil, nil
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	case "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	default:
		return nil, fmt.Errorf("tracing: unknown exporter %q", s.Exporter)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: the OTLP %s exporter: %w (check the OTEL_EXPORTER_OTLP_* environment)", s.Exporter, err)
	}
	// The default name first: OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES (WithFromEnv) override it.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", service), attribute.String("service.version", version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing: the resource from %s and OTEL_RESOURCE_ATTRIBUTES: %w", EnvServiceName, err)
	}
	// The batch processor's queue (OTEL_BSP_MAX_QUEUE_SIZE, 2048) bounds
	// what waits for the exporter; past it spans are dropped, never
	// waited for.
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

// Shutdown exports what is queued, waiting at most limit. A nil p does
// nothing.
func Shutdown(p *Provider, limit time.Duration, log *slog.Logger) {
	if p == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		log.Warn("tracing: spans not exported at stop", "err", err)
	}
}

// ErrorHandler logs the SDK's export errors through log (set it with
// otel.SetErrorHandler), instead of the standard logger.
type ErrorHandler struct{ Log *slog.Logger }

// Handle logs err.
func (h ErrorHandler) Handle(err error) { h.Log.Warn("tracing: export failed", "err", err) }
