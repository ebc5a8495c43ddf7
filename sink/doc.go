// Package sink owns the Kafka side of outboxrelay: the producer (acks=all,
// Java-compatible murmur2 partitioning), topic creation and the dead-letter
// topic. Each record is sent asynchronously and acknowledged through a
// per-record callback, which the checkpoint uses to move the confirmed LSN.
package sink
