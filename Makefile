# The two commands a newcomer needs: `make demo` and `make test`.
# Both install and start what they need (scripts/devenv); see README.md.
GO ?= go

.PHONY: demo test unit build bench bench-relay soak down
demo:
	scripts/demo

test:
	scripts/test

# Unit tests only: service tests skip with a line saying how to run them.
unit:
	$(GO) test ./...

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/outboxrelay ./cmd/outboxrelay

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./router/ ./replication/ ./sink/

# outboxrelay against pg_recvlogical: 1M-event backlogs and a steady rate (scripts/bench).
bench-relay:
	scripts/bench

down:
	scripts/devenv down
