package router

import "time"

// Header is one Kafka record header. A nil Value is a null header value,
// which is what SimpleHeaderConverter writes for a NULL column.
type Header struct {
	Key   string
	Value []byte
}

// Record is one Kafka record ready for the producer.
//
// Key, Value and the header values point into memory owned by the Router
// that produced the record; see Router.Route for how long they stay valid.
type Record struct {
	Topic string
	// Partition is the partition a "partition" placement chose, or -1 to
	// let the producer pick (Java's murmur2 of the serialized key).
	Partition int
	Key       []byte // nil is a null key
	Value     []byte // nil is a null value: a tombstone
	Headers   []Header
	// Timestamp is the record's CreateTime.
	Timestamp time.Time
	// EventID is the text of the event-id column, for logs, errors and the
	// dead-letter topic. Unlike Key and Value it is an ordinary string.
	EventID string
	// Placed, when set, is called by the delivery with the partition and
	// offset Kafka wrote the record at (offset -1 when its answer did not
	// say: a retried batch the broker had already written), on the
	// goroutine that learns the acknowledgement, just before the ack. The
	// relay sets it on the records of the events it traces.
	Placed func(partition int, offset int64)
}
