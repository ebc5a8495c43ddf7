// Package sink owns the Kafka side of outboxrelay: the producer (acks=all,
// Java-compatible murmur2 partitioning, idempotent by default), topic
// creation, the dead-letter topic, the offsets topic that records the
// confirmed position (Offsets, offsets.go), and the at-least-once
// relay.Delivery built on them (AtLeastOnce, delivery.go). Each record is
// sent asynchronously and acknowledged through a per-record callback,
// which the checkpoint uses to move the confirmed LSN.
//
// The relay's data path reaches Kafka through one contract,
// relay.Delivery, chosen by the wiring from exactly.once.support:
// AtLeastOnce here (the producer; positions recorded in the offsets topic,
// or nowhere in poll mode), or the exactly-once sink of package
// sink/exactlyonce (whole PostgreSQL transactions and their position in
// Kafka transactions), which is built on this package's producer and
// offsets topic through a few methods (transactional.go: Producer.Config,
// TxnProducer, PartitionCount; Offsets.Message and Recorded; SizeOf,
// Marked); this package never imports it. Their errors carry
// internal/terminal marks, so the relay decides retry-or-stop without
// knowing either package's sentinels.
//
// # Why not kafka-go's Writer
//
// kafka-go v0.4.51's Writer runs one goroutine per partition that writes
// batches one at a time, so batches of a partition never overlap. But a batch
// that still fails after MaxAttempts (default 10, about a second of backoff)
// is completed with the error and the goroutine moves on to the next batch:
// during a broker outage longer than that, later records succeed while the
// failed ones come back to the caller, and resending them puts them after
// their successors. Errors that kafka-go does not mark temporary (for
// example BROKER_NOT_AVAILABLE) fail at once. A Writer also cannot fail one
// record of a refused batch: a MESSAGE_TOO_LARGE for the batch fails all of
// it.
//
// So the producer is built on kafka-go's Client and Transport (metadata,
// topic creation, InitProducerId) and its protocol layer: one goroutine per
// partition owns an ordered queue and sends one batch at a time, encoded by
// internal/kafkabatch and sent as a raw produce request over the
// partition's own connection to its leader (Producer.produceRaw,
// sink/wire.go: TLS and SASL as the Transport does them, no connection
// goroutine); a transient failure retries the same bytes forever with
// capped exponential backoff
// (retry.backoff.ms .. retry.backoff.max.ms) while later records wait; a
// batch Kafka refuses for good is resent one record at a time so only the
// refused records fail (retryable decides which errors are which). That is
// Connect's max.in.flight.requests.per.connection=1 with infinite retries,
// per partition.
//
// # Idempotence
//
// With enable.idempotence (the default, as in Java) the batches carry a
// producer id from InitProducerId, an epoch and a per-partition sequence
// (idempotence.go), so a retry after a lost answer is kept once by the
// broker; a broker that lost the sequence makes the producer bump its epoch
// client-side, as Java's does since KIP-360, and resend from sequence 0.
//
// # Bounds
//
// Records accepted by Send and not yet acknowledged are bounded by
// buffer.memory (Send blocks beyond it). That is a guard: the relay's own
// in-flight budget (design invariant 5) is meant to be the smaller bound,
// so under an outage the stream pauses before Send ever blocks. A batch
// holds at most batch.size bytes and never more than max.request.size; a
// record that alone exceeds max.request.size is refused by Send.
//
// # TLS and SASL
//
// security.protocol PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL; sasl.mechanism
// PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 with username and password read from
// sasl.jaas.config. TLS material must be PEM: ssl.truststore.location with
// ssl.truststore.type=PEM or ssl.ca.location for the CA; a client
// certificate from ssl.keystore.location with ssl.keystore.type=PEM (chain
// and unencrypted key in one file) or ssl.certificate.location plus
// ssl.key.location. JKS and PKCS12 stores and encrypted keys
// (ssl.key.password) are refused with an error saying how to convert.
package sink
