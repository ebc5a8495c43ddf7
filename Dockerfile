# Multi-stage build of the static outboxrelay binary.
#   docker build -t outboxrelay .
#   docker run --rm -v $PWD/connector.json:/etc/outboxrelay/connector.json:ro \
#     -e KAFKA_BOOTSTRAP_SERVERS=kafka:9092 outboxrelay
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/outboxrelay ./cmd/outboxrelay

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/outboxrelay /usr/local/bin/outboxrelay
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/outboxrelay"]
CMD ["run", "--config", "/etc/outboxrelay/connector.json"]
