# The outboxrelay image: one static binary, the CA certificates and a
# non-root user, on an empty base (about 18 MB; nothing else to patch).
#   docker build -t outboxrelay .
#   docker run --rm --read-only -p 8080:8080 \
#     -v $PWD/connector.json:/etc/outboxrelay/connector.json:ro \
#     -e KAFKA_BOOTSTRAP_SERVERS=kafka:9092 outboxrelay
# /metrics, /healthz and /readyz are served on :8080 (the CMD below).
#
# GO_IMAGE: the toolchain image of the build stage. The RUN steps use the
# exec form, so it needs no shell; scripts/image-test builds this file
# unchanged with a stand-in made from the local Go toolchain where no
# registry is reachable.
ARG GO_IMAGE=golang:1.26-bookworm

FROM ${GO_IMAGE} AS build
WORKDIR /src
ENV CGO_ENABLED=0
COPY go.mod go.sum ./
RUN ["go", "mod", "download"]
COPY . .
RUN ["go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", "/out/outboxrelay", "./cmd/outboxrelay"]

FROM scratch
# The build stage's CA bundle (Debian's ca-certificates): Go reads it for
# TLS to Kafka and PostgreSQL when no truststore / sslrootcert is set.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
# uid and gid 65532 ("nonroot", as distroless names it); the Kubernetes
# manifest's runAsUser matches.
COPY deploy/image/passwd deploy/image/group /etc/
COPY --from=build /out/outboxrelay /usr/local/bin/outboxrelay
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/outboxrelay"]
CMD ["run", "--config", "/etc/outboxrelay/connector.json", "--http-addr", ":8080"]
