// Package kafkabatch encodes and decodes Kafka record batches (message format
// v2, magic 2) with the producer fields set: producer id, producer epoch,
// base sequence and the transactional flag, under a CRC-32C, as Java's
// DefaultRecordBatch / MemoryRecordsBuilder write them. kafka-go's encoder
// (protocol/record_v2.go) always writes -1 there, so it can produce neither
// idempotently nor in a transaction; batches encoded here are sent as
// kafka-go's raw produce requests instead (RecordSet; ProduceBatch over
// kafka-go's Client, which the tests use).
//
// Encoding and decoding are pure functions over []byte. The decoder checks
// every length against the bytes it has and the CRC before it trusts a field;
// the tests compare both directions with batches Kafka's own Java producer
// wrote to a real broker (testdata/java, with how to capture them again).
//
// TxnProducer, on top, is the transactional producer state machine
// (InitProducerId, AddPartitionsToTxn, produce with sequences, EndTxn) over
// kafka-go's Client, AddPartitionsToTxn and EndTxn on a connection of its
// own to the transaction coordinator when TxnProducerConfig.Dial is set (txncoord.go). Committed and FetchCommitted read the way a Java
// read_committed consumer does, which kafka-go's fetch does not (it
// delivers aborted records).
//
// The exactly-once sink (sink/exactlyonce.Sink) drives TxnProducer; both
// sinks copy each record they are given into a Pending (pending.go) and
// bound its size with RecordSize. The at-least-once sink.Producer encodes its batches here too (AppendMessages
// into a buffer each partition worker reuses; idempotent with
// enable.idempotence, producer id -1 without) and sends them over its own
// connections, the batch read as the request's records field through
// RecordSet; verify and the offsets topic read with FetchCommitted.
package kafkabatch
