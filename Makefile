# The two commands a newcomer needs: `make demo` and `make test`.
# Both install and start what they need (scripts/devenv); see README.md.
GO ?= go

.PHONY: demo test trace-test lint unit fuzz vulncheck build bench bench-relay soak soak-messages soak-eos bench-eos cutover shadow down image-test alerts-test
demo:
	scripts/demo

test:
	scripts/test

# One trace from the request to the consumer against Jaeger v2 (scripts/jaeger
# builds it once into the cache, about 12 minutes): examples/orders, the
# relay and the consumer with tracing on, the traces read back through
# Jaeger's query API (scripts/trace-test). Needs the bed: scripts/devenv up.
trace-test:
	scripts/trace-test

# go vet and staticcheck (pinned in scripts/lint, installed once into
# ~/.cache/outboxrelay); make test runs it first.
lint:
	scripts/lint

# Unit tests only: service tests skip with a line saying how to run them.
unit:
	$(GO) test ./...

# Every fuzz target of the module, one after the other, FUZZTIME each
# (default 60s; about 8 minutes in all on 2 cores), stopping at the first
# failure and naming it (scripts/fuzz).
fuzz:
	scripts/fuzz

# govulncheck ./... against a vulnerability database built from a
# golang/vulndb checkout (scripts/govulncheck).
vulncheck:
	scripts/govulncheck

# The image users build from ./Dockerfile, built and run against the bed
# (scripts/image-test; make test runs it when a Docker engine can be started).
image-test:
	scripts/image-test

# promtool check and unit tests of deploy/prometheus/alerts.yml.
alerts-test:
	scripts/alerts-test

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/outboxrelay ./cmd/outboxrelay

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./router/ ./replication/ ./sink/ ./relay/

# outboxrelay against pg_recvlogical: 1M-event backlogs and a steady rate (scripts/bench).
bench-relay:
	scripts/bench

# The fault suite's long form (internal/e2e TestFaults): 200 SIGKILLs under
# load, a 2-minute Kafka outage, 5 PostgreSQL restarts, 5 walsenders
# terminated mid-transaction, on a private bed; about 20 minutes. The shared
# bed is started when down (and stopped again after).
soak:
	@started=0; scripts/devenv status >/dev/null 2>&1 || started=1; \
	env_lines=$$(scripts/devenv up) || exit 1; eval "$$env_lines"; \
	OUTBOXRELAY_SOAK=1 OUTBOXRELAY_REQUIRE_SERVICES=1 $(GO) test -count=1 -timeout 60m -v -run '^TestFaults$$' ./internal/e2e/; rc=$$?; \
	if [ $$started = 1 ]; then scripts/devenv down; fi; exit $$rc

# The crash loop with the events written as logical decoding messages
# (TestMessagesCrashLoop): 20 SIGKILLs under 1,000 messages/s on a private
# bed; a few minutes.
soak-messages:
	@started=0; scripts/devenv status >/dev/null 2>&1 || started=1; \
	env_lines=$$(scripts/devenv up) || exit 1; eval "$$env_lines"; \
	OUTBOXRELAY_MESSAGES_CRASH=$${OUTBOXRELAY_MESSAGES_CRASH:-20} OUTBOXRELAY_REQUIRE_SERVICES=1 $(GO) test -count=1 -timeout 30m -v -run '^TestMessagesCrashLoop$$' ./internal/e2e/; rc=$$?; \
	if [ $$started = 1 ]; then scripts/devenv down; fi; exit $$rc

# Exactly-once (internal/e2e TestExactlyOnce): 100 SIGKILLs under 2,000
# events/s with exactly.once.support=required, then the same loop
# at-least-once counting its duplicates; the zombie and the broker
# restart. About 20 minutes.
soak-eos:
	@started=0; scripts/devenv status >/dev/null 2>&1 || started=1; \
	env_lines=$$(scripts/devenv up) || exit 1; eval "$$env_lines"; \
	OUTBOXRELAY_EOS_CYCLES=100 OUTBOXRELAY_EOS_COMPARE=1 OUTBOXRELAY_REQUIRE_SERVICES=1 $(GO) test -count=1 -timeout 60m -v -run '^TestExactlyOnce$$' ./internal/e2e/; rc=$$?; \
	if [ $$started = 1 ]; then scripts/devenv down; fi; exit $$rc

# The Debezium cut-over (internal/e2e TestDebeziumCutOver): Debezium 3.7.1
# on Kafka Connect distributed under 500 events/s, its connector stopped and
# outboxrelay started on the same JSON, slot and offsets topic; back to
# Debezium; the Connect worker SIGKILLed and outboxrelay again. About 2
# minutes (OUTBOXRELAY_CUTOVER_PHASE, default 20s, per producer).
cutover:
	@started=0; scripts/devenv status >/dev/null 2>&1 || started=1; \
	env_lines=$$(scripts/devenv up) || exit 1; eval "$$env_lines"; \
	scripts/debezium fetch || exit 1; \
	OUTBOXRELAY_CUTOVER=1 OUTBOXRELAY_REQUIRE_SERVICES=1 $(GO) test -count=1 -timeout 20m -v -run '^TestDebeziumCutOver$$' ./internal/e2e/; rc=$$?; \
	if [ $$started = 1 ]; then scripts/devenv down; fi; exit $$rc

# The shadow run (internal/e2e TestDebeziumShadow): outboxrelay --shadow
# beside Debezium 3.7.1 on Kafka Connect distributed under 500 events/s for
# OUTBOXRELAY_SHADOW (default 10m), then verify --shadow, and a planted
# difference found. make test runs it for 30s.
shadow:
	@started=0; scripts/devenv status >/dev/null 2>&1 || started=1; \
	env_lines=$$(scripts/devenv up) || exit 1; eval "$$env_lines"; \
	scripts/debezium fetch || exit 1; \
	OUTBOXRELAY_SHADOW=$${OUTBOXRELAY_SHADOW:-10m} OUTBOXRELAY_REQUIRE_SERVICES=1 $(GO) test -count=1 -timeout 40m -v -run '^TestDebeziumShadow$$' ./internal/e2e/; rc=$$?; \
	if [ $$started = 1 ]; then scripts/devenv down; fi; exit $$rc

# Exactly-once against at-least-once on one bed (scripts/bench-eos):
# writes testdata/bench/extra/exactly-once.md.
bench-eos:
	scripts/bench-eos

down:
	scripts/devenv down
