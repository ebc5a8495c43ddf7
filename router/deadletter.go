package router

// Dead-letter headers, which the relay's dead-letter topic and the
// consumer library's both write. The __connect.errors.* names are Kafka
// Connect's (DeadLetterQueueReporter, with
// errors.deadletterqueue.context.headers.enable), so tooling written for
// Connect's dead-letter topics reads ours.
const (
	HeaderDLQTopic          = "__connect.errors.topic"
	HeaderDLQConnectorName  = "__connect.errors.connector.name"
	HeaderDLQTaskID         = "__connect.errors.task.id"
	HeaderDLQStage          = "__connect.errors.stage"
	HeaderDLQExceptionClass = "__connect.errors.exception.class.name"
	HeaderDLQExceptionMsg   = "__connect.errors.exception.message"
	HeaderDLQLSN            = "__outboxrelay.lsn"
	HeaderDLQSourceTable    = "__outboxrelay.source.table"
	HeaderDLQEventID        = "__outboxrelay.event.id"
)
