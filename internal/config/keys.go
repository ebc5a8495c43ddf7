package config

import (
	"strings"
)

// Section names a part of the relay that reads a key. A key may feed several
// sections (topic.prefix names context headers and heartbeat topics).
type Section uint8

const (
	SectionRouter   Section = 1 << iota // Config.Router
	SectionPostgres                     // Config.Postgres
	SectionKafka                        // Config.Kafka
	SectionRelay                        // Config.Relay
)

// String lists the sections, for generated docs: "router+postgres".
func (s Section) String() string {
	var parts []string
	for _, n := range []struct {
		s    Section
		name string
	}{{SectionRouter, "router"}, {SectionPostgres, "postgres"}, {SectionKafka, "kafka"}, {SectionRelay, "relay"}} {
		if s&n.s != 0 {
			parts = append(parts, n.name)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

// Where a key comes from; docs/configuration.md groups keys by it.
const (
	OriginDebezium    = "Debezium PostgreSQL connector"
	OriginEventRouter = "Debezium Outbox EventRouter"
	OriginConnect     = "Kafka Connect"
	OriginProducer    = "Kafka producer" // also accepted as producer.<key> and producer.override.<key>
	OriginOutboxrelay = "outboxrelay"    // keys of outboxrelay's own, with no Debezium or Kafka equivalent
)

// KeyDoc describes one configuration key outboxrelay knows.
type KeyDoc struct {
	// Key is the key as written in the connector JSON. A trailing ".*"
	// matches every key with that prefix that has no entry of its own;
	// "<alias>" stands for a transform alias listed in transforms.
	Key      string
	Sections Section // maps that receive the key; 0: read by this package only, or no effect
	Default  string  // "" when there is none
	Origin   string  // one of the Origin constants
	Doc      string  // one line: what outboxrelay does with it
	Secret   bool    // the value is a password or key: redacted and scrubbed
	Required bool    // Parse fails when the key is missing
	// Values lists the accepted values; empty means any, and {""} refuses
	// every non-empty value. Enum values match case-insensitively as in
	// Kafka's and Debezium's ConfigDefs; Java class names (values with a
	// dot) match exactly.
	Values []string
	// Instead says what to write when the value is not in Values or a
	// required key is missing.
	Instead string
	// NoEffect, when set, marks a key Debezium or Kafka knows but that
	// changes nothing in outboxrelay; it is why, and the key gets a warning.
	NoEffect string
}

// Keys returns the table of known keys, sorted as written (grouped by
// origin). Each call builds a fresh copy, so callers may keep or change it.
func Keys() []KeyDoc {
	return keyTable()
}

// Class names accepted in connector.class, key.converter, value.converter
// and header.converter; the router package checks the same names.
const (
	postgresConnectorClass     = "io.debezium.connector.postgresql.PostgresConnector"
	stringConverterClass       = "org.apache.kafka.connect.storage.StringConverter"
	jsonConverterClass         = "org.apache.kafka.connect.json.JsonConverter"
	simpleHeaderConverterClass = "org.apache.kafka.connect.storage.SimpleHeaderConverter"
)

// Reasons shared by several no-effect keys.
const (
	envelopeOnly  = "it shapes Debezium's change-event envelope, which the EventRouter replaces by the outbox columns"
	queueTuning   = "it tunes Kafka Connect's task queue; outboxrelay bounds the work in flight itself, in records and bytes"
	snapshotTune  = "outboxrelay reads the outbox table in the slot's exported snapshot with one query"
	tableFilter   = "outboxrelay captures exactly the tables of table.include.list"
	topicNaming   = "the EventRouter picks the topic of every outbox event"
	noSignals     = "outboxrelay implements neither Debezium signals nor incremental snapshots"
	removedInV2   = "it was removed in Debezium 2.0"
	ackedAtOnce   = "outboxrelay confirms each commit to PostgreSQL as soon as Kafka has acknowledged it and everything before it"
	retryForever  = "outboxrelay retries Kafka sends forever with capped backoff and keeps per-partition order"
	adminSettings = "outboxrelay creates topics with the producer's connection settings"
)

func keyTable() []KeyDoc {
	bools := []string{"true", "false"}
	return []KeyDoc{
		// Kafka Connect's connector-level keys.
		{Key: "name", Origin: OriginConnect, Doc: "connector name; must equal the top-level \"name\" when both are set"},
		{Key: "connector.class", Origin: OriginConnect, Default: postgresConnectorClass, Doc: "checked only",
			Values:  []string{postgresConnectorClass},
			Instead: "outboxrelay replaces Debezium's PostgreSQL connector only; set connector.class=" + postgresConnectorClass},
		{Key: "tasks.max", Origin: OriginConnect, Default: "1", Doc: "checked only: one slot is read by one task, as in Debezium"},
		{Key: "transforms", Sections: SectionRouter, Origin: OriginConnect, Doc: "the alias of the one EventRouter, e.g. outbox; checked by the router"},
		{Key: "transforms.*", Sections: SectionRouter, Origin: OriginEventRouter, Doc: "any other transforms.<alias>.* key; the router warns about the ones it does not know"},
		{Key: "transforms.<alias>.type", Sections: SectionRouter, Origin: OriginEventRouter, Doc: "must be io.debezium.transforms.outbox.EventRouter"},
		{Key: "transforms.<alias>.table.field.event.id", Sections: SectionRouter, Origin: OriginEventRouter, Default: "id", Doc: "column sent as the header id"},
		{Key: "transforms.<alias>.table.field.event.key", Sections: SectionRouter, Origin: OriginEventRouter, Default: "aggregateid", Doc: "column sent as the record key"},
		{Key: "transforms.<alias>.table.field.event.type", Sections: SectionRouter, Origin: OriginEventRouter, Default: "type", Doc: "checked, unused (as Debezium 3.x); place it with table.fields.additional.placement"},
		{Key: "transforms.<alias>.table.field.event.payload", Sections: SectionRouter, Origin: OriginEventRouter, Default: "payload", Doc: "column sent as the record value"},
		{Key: "transforms.<alias>.table.field.event.timestamp", Sections: SectionRouter, Origin: OriginEventRouter, Doc: "column for the record timestamp; unset or NULL: the commit time (snapshot rows: processing time)"},
		{Key: "transforms.<alias>.table.fields.additional.placement", Sections: SectionRouter, Origin: OriginEventRouter, Doc: "col:header|envelope|partition[:alias], comma separated"},
		{Key: "transforms.<alias>.table.field.additional.missing", Sections: SectionRouter, Origin: OriginEventRouter, Default: "error", Doc: "error or ignore a placement column the row lacks"},
		{Key: "transforms.<alias>.table.fields.additional.error.on.missing", Sections: SectionRouter, Origin: OriginEventRouter, Default: "true", Doc: "older spelling of table.field.additional.missing"},
		{Key: "transforms.<alias>.table.expand.json.payload", Sections: SectionRouter, Origin: OriginEventRouter, Default: "false", Doc: "send the payload as JSON rather than a JSON string (lossless in outboxrelay)"},
		{Key: "transforms.<alias>.table.json.payload.null.behavior", Sections: SectionRouter, Origin: OriginEventRouter, Default: "ignore", Doc: "ignore or optional_bytes"},
		{Key: "transforms.<alias>.table.json.payload.empty.array.behavior", Sections: SectionRouter, Origin: OriginEventRouter, Default: "ignore", Doc: "ignore or optional_string (Debezium 3.7)"},
		{Key: "transforms.<alias>.route.by.field", Sections: SectionRouter, Origin: OriginEventRouter, Default: "aggregatetype", Doc: "column whose value picks the topic"},
		{Key: "transforms.<alias>.route.topic.regex", Sections: SectionRouter, Origin: OriginEventRouter, Default: "(?<routedByValue>.*)", Doc: "Java regex matched against the whole route value"},
		{Key: "transforms.<alias>.route.topic.replacement", Sections: SectionRouter, Origin: OriginEventRouter, Default: "outbox.event.${routedByValue}", Doc: "Java replacement giving the topic (not a config provider)"},
		{Key: "transforms.<alias>.route.tombstone.on.empty.payload", Sections: SectionRouter, Origin: OriginEventRouter, Default: "false", Doc: "empty or NULL payload: send a tombstone"},
		{Key: "transforms.<alias>.table.op.invalid.behavior", Sections: SectionRouter, Origin: OriginEventRouter, Default: "warn", Doc: "UPDATE rows: warn, error (both drop the row) or fatal (stop)"},
		{Key: "transforms.<alias>.tracing.span.context.field", Sections: SectionRouter, Origin: OriginEventRouter, Default: "tracingspancontext", Doc: "column with a span context, sent as W3C trace headers"},
		{Key: "key.converter", Sections: SectionRouter, Origin: OriginConnect, Default: stringConverterClass,
			Doc:     "record key serialization (Connect's worker default is JsonConverter; outboxrelay's is StringConverter)",
			Values:  []string{stringConverterClass, jsonConverterClass},
			Instead: "outboxrelay writes keys as Connect's StringConverter or JsonConverter; set key.converter=" + stringConverterClass + " or " + jsonConverterClass},
		{Key: "key.converter.schemas.enable", Sections: SectionRouter, Origin: OriginConnect, Default: "true with JsonConverter", Doc: "JsonConverter keys with a schema envelope", Values: bools},
		{Key: "key.converter.*", Origin: OriginConnect, NoEffect: "outboxrelay's converters take no option but schemas.enable (is the key misspelt?)"},
		{Key: "value.converter", Sections: SectionRouter, Origin: OriginConnect, Default: jsonConverterClass,
			Doc:     "record value serialization; JsonConverter with value.converter.schemas.enable=false by default",
			Values:  []string{stringConverterClass, jsonConverterClass},
			Instead: "outboxrelay writes values as Connect's StringConverter or JsonConverter; set value.converter=" + jsonConverterClass + " or " + stringConverterClass},
		{Key: "value.converter.schemas.enable", Sections: SectionRouter, Origin: OriginConnect, Default: "false (outboxrelay's JsonConverter default)", Doc: "JsonConverter values with a schema envelope", Values: bools},
		{Key: "value.converter.*", Origin: OriginConnect, NoEffect: "outboxrelay's converters take no option but schemas.enable (is the key misspelt?)"},
		{Key: "header.converter", Sections: SectionRouter, Origin: OriginConnect, Default: simpleHeaderConverterClass,
			Doc:     "header serialization",
			Values:  []string{simpleHeaderConverterClass},
			Instead: "outboxrelay writes headers as Connect's SimpleHeaderConverter; remove header.converter or set it to " + simpleHeaderConverterClass},
		{Key: "header.converter.*", Origin: OriginConnect, NoEffect: "the SimpleHeaderConverter takes no options"},
		{Key: "errors.tolerance", Sections: SectionRelay | SectionPostgres, Origin: OriginConnect, Default: "none",
			Doc: "none: stop on a poison row; all: send it to the dead-letter topic when one is set", Values: []string{"none", "all"}},
		{Key: "errors.*", Origin: OriginConnect, NoEffect: "outboxrelay retries connections with errors.max.retries and handles poison rows by errors.tolerance; it reads no other errors.* key (is it misspelt?)"},
		{Key: "errors.deadletterqueue.topic.name", Sections: SectionKafka, Origin: OriginConnect, Doc: "dead-letter topic for poison rows with errors.tolerance=all; created with one partition when missing"},
		{Key: "errors.deadletterqueue.topic.replication.factor", Sections: SectionKafka, Origin: OriginConnect, Default: "topic.creation.default.replication.factor, else -1",
			Doc: "replication factor of a created dead-letter topic (Connect's default 3 fails on one broker)"},
		{Key: "errors.deadletterqueue.context.headers.enable", Origin: OriginConnect, NoEffect: "outboxrelay always adds the __connect.errors.* context headers"},
		{Key: "errors.deadletterqueue.*", Origin: OriginConnect, NoEffect: "not a dead-letter key outboxrelay reads (is it misspelt?)"},
		{Key: "topic.creation.default.partitions", Sections: SectionKafka, Origin: OriginConnect, Doc: "with .replication.factor: create missing topics with this many partitions (-1: broker default)"},
		{Key: "topic.creation.default.replication.factor", Sections: SectionKafka, Origin: OriginConnect, Doc: "with .partitions: replication factor of created topics (-1: broker default)"},
		{Key: "topic.creation.default.*", Sections: SectionKafka, Origin: OriginConnect,
			Doc: "any other topic config (cleanup.policy, retention.ms, ...), given to every topic the relay creates but the dead-letter topic"},
		{Key: "topic.creation.groups", Origin: OriginConnect, NoEffect: "outboxrelay creates every topic with topic.creation.default.*"},
		{Key: "predicates", Origin: OriginConnect, Doc: "refused: a predicate would skip rows the relay cannot skip",
			Values: []string{""}, Instead: "outboxrelay does not run predicates; remove predicates and filter rows in the publication instead"},
		{Key: "predicates.*", Origin: OriginConnect, Doc: "refused with predicates",
			Values: []string{""}, Instead: "outboxrelay does not run predicates; remove the key"},
		{Key: "exactly.once.support", Sections: SectionRelay, Origin: OriginConnect, Default: "requested",
			Doc:    "required: write each batch of whole PostgreSQL transactions and its position in one Kafka transaction (read_committed readers see every event once); requested: at-least-once",
			Values: []string{"requested", "required"}},
		{Key: "transaction.boundary", Sections: SectionRelay, Origin: OriginConnect, Default: "poll",
			Doc:     "with exactly.once.support=required: poll commits what the relay has at hand after each commit; interval commits every transaction.boundary.interval.ms; always at a PostgreSQL commit",
			Values:  []string{"poll", "interval"},
			Instead: "outboxrelay commits Kafka transactions at PostgreSQL commits, by poll or interval; set transaction.boundary to poll or interval"},
		{Key: "transaction.boundary.interval.ms", Sections: SectionRelay, Origin: OriginConnect, Default: "offset.flush.interval.ms",
			Doc: "with transaction.boundary=interval: how often a Kafka transaction commits"},
		{Key: "transactional.id", Sections: SectionRelay, Origin: OriginOutboxrelay, Default: "the connector's name",
			Doc: "with exactly.once.support=required: the Kafka transactional.id; a second instance with the same one fences the first"},
		{Key: "transaction.timeout.ms", Sections: SectionRelay, Origin: OriginOutboxrelay, Default: "60000",
			Doc: "with exactly.once.support=required: the coordinator aborts a Kafka transaction open longer (a commit is forced at half of it)"},
		{Key: "config.action.reload", Origin: OriginConnect, NoEffect: "outboxrelay reads its config file once; restart it to apply a change"},
		{Key: "offset.flush.interval.ms", Sections: SectionRelay, Origin: OriginConnect, Default: "1000",
			Doc: "how often the confirmed position is recorded in offsets.storage.topic while it moves (Connect's default is 60000; the slot is confirmed at once either way)"},
		{Key: "offset.flush.timeout.ms", Origin: OriginConnect, NoEffect: ackedAtOnce},
		{Key: "offsets.storage.topic", Sections: SectionRelay, Origin: OriginConnect, Default: "outboxrelay-offsets",
			Doc: "compacted topic where the confirmed position is recorded, keyed [\"<name>\",{\"server\":\"<topic.prefix>\"}] as Connect keys source offsets; created with one partition when missing. A slot that is gone while a position is recorded stops the relay (see snapshot.mode=when_needed)"},
		{Key: "offsets.storage.replication.factor", Sections: SectionRelay, Origin: OriginConnect, Default: "-1 (broker default)",
			Doc: "replication factor of offsets.storage.topic when the relay creates it"},
		{Key: "admin.override.*", Origin: OriginConnect, NoEffect: adminSettings},
		{Key: "consumer.override.*", Origin: OriginConnect, NoEffect: "a source connector has no consumer"},

		// Debezium's PostgreSQL connector.
		{Key: "topic.prefix", Sections: SectionRouter | SectionPostgres, Origin: OriginDebezium, Required: true,
			Doc:     "logical name: __debezium.context.connectorLogicalName header and heartbeat topic names",
			Instead: "Debezium requires it too; set topic.prefix to the connector's logical name, e.g. order_db"},
		{Key: "database.hostname", Sections: SectionPostgres, Origin: OriginDebezium, Required: true, Doc: "PostgreSQL host",
			Instead: "set database.hostname to the PostgreSQL host, e.g. 127.0.0.1"},
		{Key: "database.port", Sections: SectionPostgres, Origin: OriginDebezium, Default: "5432", Doc: "PostgreSQL port"},
		{Key: "database.user", Sections: SectionPostgres, Origin: OriginDebezium, Required: true, Doc: "role with REPLICATION (or superuser)",
			Instead: "set database.user to a role with the REPLICATION attribute"},
		{Key: "database.password", Sections: SectionPostgres, Origin: OriginDebezium, Secret: true, Doc: "password of database.user; use ${env:NAME} or ${file:path:key}"},
		{Key: "database.dbname", Sections: SectionPostgres, Origin: OriginDebezium, Required: true, Doc: "database holding the outbox table",
			Instead: "set database.dbname to the database that holds the outbox table"},
		{Key: "database.sslmode", Sections: SectionPostgres, Origin: OriginDebezium, Default: "prefer", Doc: "TLS mode, as libpq",
			Values: []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}},
		{Key: "database.sslrootcert", Sections: SectionPostgres, Origin: OriginDebezium, Doc: "CA certificate file, as libpq sslrootcert"},
		{Key: "database.sslcert", Sections: SectionPostgres, Origin: OriginDebezium, Doc: "client certificate file, as libpq sslcert"},
		{Key: "database.sslkey", Sections: SectionPostgres, Origin: OriginDebezium, Doc: "client key file, as libpq sslkey"},
		{Key: "database.sslpassword", Sections: SectionPostgres, Origin: OriginDebezium, Secret: true, Doc: "password of database.sslkey, as libpq sslpassword"},
		{Key: "database.initial.statements", Origin: OriginDebezium, NoEffect: "outboxrelay runs no statements of its own on connecting; set per-role settings with ALTER ROLE … SET"},
		{Key: "database.*", Origin: OriginDebezium, NoEffect: "not a connection key outboxrelay reads (is it misspelt? the ones it reads are listed here)"},
		{Key: "plugin.name", Sections: SectionPostgres, Origin: OriginDebezium, Default: "decoderbufs (Debezium); must be pgoutput", Required: true,
			Doc:     "logical decoding plugin; only pgoutput",
			Values:  []string{"pgoutput"},
			Instead: "outboxrelay decodes only pgoutput; set plugin.name=pgoutput (PostgreSQL 10+ built-in)"},
		{Key: "slot.name", Sections: SectionPostgres, Origin: OriginDebezium, Default: "debezium", Doc: "replication slot, created when missing, never temporary"},
		{Key: "slot.drop.on.stop", Sections: SectionPostgres, Origin: OriginDebezium, Default: "false", Doc: "drop the slot on an orderly stop", Values: bools},
		{Key: "slot.max.retries", Sections: SectionPostgres, Origin: OriginDebezium, Default: "6", Doc: "times to retry a slot another connection still holds, before stopping with an error"},
		{Key: "slot.retry.delay.ms", Sections: SectionPostgres, Origin: OriginDebezium, Default: "10000", Doc: "wait between those retries"},
		{Key: "slot.failover", Sections: SectionPostgres, Origin: OriginDebezium, Default: "false", Values: bools,
			Doc: "PostgreSQL 17+: create the slot with failover enabled (and enable it on an existing slot), so that standbys with sync_replication_slots = on keep a copy that survives a failover"},
		{Key: "slot.*", Origin: OriginDebezium, NoEffect: "not a slot key outboxrelay reads (is it misspelt?); pgoutput's stream parameters are fixed"},
		{Key: "publication.name", Sections: SectionPostgres, Origin: OriginDebezium, Default: "dbz_publication", Doc: "publication streamed by pgoutput"},
		{Key: "publication.autocreate.mode", Sections: SectionPostgres, Origin: OriginDebezium, Default: "all_tables",
			Doc:     "disabled | filtered | all_tables | no_tables, as Debezium",
			Values:  []string{"disabled", "filtered", "all_tables", "no_tables"},
			Instead: "write disabled (the publication must exist), filtered, all_tables or no_tables"},
		{Key: "publication.*", Origin: OriginDebezium, NoEffect: "not a publication key outboxrelay reads (is it misspelt?)"},
		{Key: "table.include.list", Sections: SectionPostgres, Origin: OriginDebezium, Required: true,
			Doc:     "the outbox table(s): regular expressions on schema.table",
			Instead: "name the outbox table, e.g. table.include.list=public.outbox"},
		{Key: "snapshot.mode", Sections: SectionPostgres, Origin: OriginDebezium, Default: "initial",
			Doc:     "initial | no_data (aliases schema_only, never) | initial_only | when_needed (as initial); always is refused: it would republish every row at each start",
			Values:  []string{"initial", "no_data", "schema_only", "never", "initial_only", "when_needed"},
			Instead: "outboxrelay supports initial, no_data (or its aliases schema_only, never), initial_only and when_needed; always would publish every outbox row again at each start"},
		{Key: "snapshot.select.statement.overrides", Origin: OriginDebezium, Doc: "refused: it changes which rows an initial snapshot sends",
			Values: []string{""}, Instead: "outboxrelay snapshots whole outbox tables; remove the key (delete dispatched rows instead)"},
		{Key: "snapshot.select.statement.overrides.*", Origin: OriginDebezium, Doc: "refused with snapshot.select.statement.overrides",
			Values: []string{""}, Instead: "outboxrelay snapshots whole outbox tables; remove the key"},
		{Key: "heartbeat.interval.ms", Sections: SectionPostgres, Origin: OriginDebezium, Default: "0", Doc: "keep the slot moving while the outbox is idle"},
		{Key: "heartbeat.action.query", Sections: SectionPostgres, Origin: OriginDebezium, Doc: "SQL run on each heartbeat"},
		{Key: "heartbeat.*", Origin: OriginDebezium, NoEffect: "not a heartbeat key outboxrelay reads (is it misspelt?)"},
		{Key: "topic.heartbeat.prefix", Sections: SectionPostgres, Origin: OriginDebezium, Default: "__debezium-heartbeat", Doc: "heartbeat topic prefix"},
		{Key: "status.update.interval.ms", Sections: SectionPostgres, Origin: OriginDebezium, Default: "10000", Doc: "longest gap between standby status updates"},
		{Key: "skipped.operations", Sections: SectionPostgres, Origin: OriginDebezium, Default: "t", Doc: "operations not captured; the router skips updates, deletes and truncates anyway"},
		{Key: "errors.max.retries", Sections: SectionRelay | SectionPostgres, Origin: OriginDebezium, Default: "-1", Doc: "retries of a transient failure; -1 forever"},
		{Key: "retriable.restart.connector.wait.ms", Sections: SectionRelay | SectionPostgres, Origin: OriginDebezium, Default: "10000", Doc: "wait before reconnecting after a transient failure"},
		{Key: "decimal.handling.mode", Sections: SectionRouter, Origin: OriginDebezium, Default: "precise",
			Doc: "how a numeric column is written inside JSON (envelope placements)", Values: []string{"precise", "double", "string"}},
		{Key: "extended.headers.enabled", Sections: SectionRouter, Origin: OriginDebezium, Default: "false (Debezium 3.2.1+: true)",
			Doc: "add the __debezium.context.* headers", Values: bools},
		{Key: "flush.lsn.source", Origin: OriginDebezium, Default: "true", Doc: "checked only", Values: []string{"true"},
			Instead: "outboxrelay always confirms the LSN it has delivered; remove flush.lsn.source"},
		{Key: "time.precision.mode", Origin: OriginDebezium, NoEffect: envelopeOnly},
		{Key: "binary.handling.mode", Sections: SectionRouter, Origin: OriginDebezium, Default: "bytes",
			Doc: "without DecodeLogicalDecodingMessageContent: no effect (bytea headers are padded Base64 as SimpleHeaderConverter writes them); with it, only bytes: Debezium's decoder refuses a message content in any other mode"},
		{Key: "hstore.handling.mode", Origin: OriginDebezium, NoEffect: envelopeOnly},
		{Key: "interval.handling.mode", Origin: OriginDebezium, NoEffect: envelopeOnly},
		{Key: "money.fraction.digits", Origin: OriginDebezium, NoEffect: envelopeOnly},
		{Key: "include.unknown.datatypes", Origin: OriginDebezium, NoEffect: envelopeOnly},
		{Key: "tombstones.on.delete", Origin: OriginDebezium, NoEffect: "the EventRouter drops deletes; see route.tombstone.on.empty.payload"},
		{Key: "column.propagate.source.type", Origin: OriginDebezium, NoEffect: envelopeOnly},
		{Key: "datatype.propagate.source.type", Origin: OriginDebezium, NoEffect: envelopeOnly},
		{Key: "field.name.adjustment.mode", Origin: OriginDebezium, NoEffect: envelopeOnly},
		{Key: "schema.name.adjustment.mode", Origin: OriginDebezium, NoEffect: envelopeOnly},
		{Key: "unavailable.value.placeholder", Origin: OriginDebezium, NoEffect: envelopeOnly},
		{Key: "message.key.columns", Origin: OriginDebezium, NoEffect: "the EventRouter takes the key from table.field.event.key"},
		{Key: "provide.transaction.metadata", Origin: OriginDebezium, NoEffect: "outboxrelay publishes no transaction metadata topic"},
		{Key: "converters", Origin: OriginDebezium, NoEffect: "outboxrelay runs no custom value converters; columns are PostgreSQL's text"},
		{Key: "converters.*", Origin: OriginDebezium, NoEffect: "outboxrelay runs no custom value converters; columns are PostgreSQL's text"},
		{Key: "post.processors", Origin: OriginDebezium, NoEffect: "outboxrelay runs no post processors"},
		{Key: "column.*", Origin: OriginDebezium, NoEffect: envelopeOnly},
		{Key: "max.batch.size", Origin: OriginDebezium, NoEffect: queueTuning},
		{Key: "max.queue.size", Origin: OriginDebezium, NoEffect: queueTuning},
		{Key: "max.queue.size.in.bytes", Origin: OriginDebezium, NoEffect: queueTuning},
		{Key: "poll.interval.ms", Origin: OriginDebezium, NoEffect: queueTuning},
		{Key: "snapshot.locking.mode", Origin: OriginDebezium, NoEffect: snapshotTune},
		{Key: "snapshot.query.mode", Origin: OriginDebezium, NoEffect: snapshotTune},
		{Key: "snapshot.fetch.size", Origin: OriginDebezium, NoEffect: snapshotTune},
		{Key: "snapshot.lock.timeout.ms", Origin: OriginDebezium, NoEffect: snapshotTune},
		{Key: "snapshot.max.threads", Origin: OriginDebezium, NoEffect: snapshotTune},
		{Key: "snapshot.delay.ms", Origin: OriginDebezium, NoEffect: snapshotTune},
		{Key: "snapshot.include.collection.list", Origin: OriginDebezium, NoEffect: snapshotTune + " over table.include.list"},
		{Key: "query.fetch.size", Origin: OriginDebezium, NoEffect: snapshotTune},
		{Key: "schema.include.list", Origin: OriginDebezium, NoEffect: tableFilter},
		{Key: "schema.exclude.list", Origin: OriginDebezium, NoEffect: tableFilter},
		{Key: "table.exclude.list", Origin: OriginDebezium, NoEffect: tableFilter},
		{Key: "message.prefix.include.list", Sections: SectionPostgres, Origin: OriginDebezium,
			Doc: "logical decoding messages routed (with DecodeLogicalDecodingMessageContent in transforms): regular expressions matched case-insensitively against the whole prefix; default all"},
		{Key: "message.prefix.exclude.list", Sections: SectionPostgres, Origin: OriginDebezium,
			Doc: "logical decoding messages skipped: regular expressions on the whole prefix; not with message.prefix.include.list"},
		{Key: "outbox.messages.only", Sections: SectionPostgres, Origin: OriginOutboxrelay, Default: "false",
			Doc: "true: the events are only logical decoding messages, and table.include.list must match no table; false: a list matching no table is a start-up error"},
		{Key: "skip.messages.without.change", Origin: OriginDebezium, NoEffect: "the EventRouter publishes inserts only"},
		{Key: "replica.identity.autoset.values", Origin: OriginDebezium, NoEffect: "the outbox table needs no particular replica identity: only inserts are published"},
		{Key: "xmin.fetch.interval.ms", Origin: OriginDebezium, NoEffect: envelopeOnly},
		{Key: "event.processing.failure.handling.mode", Origin: OriginDebezium, NoEffect: "outboxrelay never drops a row it cannot decode: it stops with an error naming it"},
		{Key: "topic.naming.strategy", Origin: OriginDebezium, NoEffect: topicNaming},
		{Key: "topic.delimiter", Origin: OriginDebezium, NoEffect: topicNaming},
		{Key: "topic.cache.size", Origin: OriginDebezium, NoEffect: topicNaming},
		{Key: "topic.transaction", Origin: OriginDebezium, NoEffect: "outboxrelay publishes no transaction metadata topic"},
		{Key: "signal.data.collection", Origin: OriginDebezium, NoEffect: noSignals},
		{Key: "signal.enabled.channels", Origin: OriginDebezium, NoEffect: noSignals},
		{Key: "signal.*", Origin: OriginDebezium, NoEffect: noSignals},
		{Key: "incremental.snapshot.*", Origin: OriginDebezium, NoEffect: noSignals},
		{Key: "read.only", Origin: OriginDebezium, NoEffect: noSignals},
		{Key: "notification.*", Origin: OriginDebezium, NoEffect: "outboxrelay logs its progress instead of sending Debezium notifications"},
		{Key: "custom.metric.tags", Origin: OriginDebezium, NoEffect: "outboxrelay's metrics carry no custom tags"},
		{Key: "database.server.name", Origin: OriginDebezium, NoEffect: removedInV2 + "; topic.prefix replaces it"},
		{Key: "table.whitelist", Origin: OriginDebezium, NoEffect: removedInV2 + "; write table.include.list"},
		{Key: "table.blacklist", Origin: OriginDebezium, NoEffect: removedInV2 + "; write table.exclude.list"},
		{Key: "schema.whitelist", Origin: OriginDebezium, NoEffect: removedInV2 + "; write schema.include.list"},
		{Key: "schema.blacklist", Origin: OriginDebezium, NoEffect: removedInV2 + "; write schema.exclude.list"},
		{Key: "heartbeat.topics.prefix", Origin: OriginDebezium, NoEffect: removedInV2 + "; write topic.heartbeat.prefix"},
		{Key: "internal.*", Origin: OriginDebezium, NoEffect: "Debezium's internal keys do not apply to outboxrelay"},

		// outboxrelay's own keys.
		{Key: "outbox.retention.ms", Sections: SectionRelay, Origin: OriginOutboxrelay, Default: "0 (off)",
			Doc: "delete outbox rows older than this, once the slot confirmed them, in batches of 1000; the role needs DELETE on the table"},
		{Key: "outbox.retention.column", Sections: SectionRelay, Origin: OriginOutboxrelay, Default: "created_at",
			Doc: "the outbox table's insert-time column (timestamp or timestamptz) that outbox.retention.ms is measured on"},
		{Key: "outbox.capture.mode", Sections: SectionRelay, Origin: OriginOutboxrelay, Default: "logical",
			Doc:     "logical: logical replication (slot, publication, wal_level=logical); poll: poll the outbox table (no slot, any wal_level, SELECT and UPDATE only)",
			Values:  []string{"logical", "poll"},
			Instead: "set outbox.capture.mode to logical (the default) or poll"},
		{Key: "outbox.poll.interval.ms", Sections: SectionRelay, Origin: OriginOutboxrelay, Default: "500",
			Doc: "poll mode: the longest wait between two polls while the outbox is idle"},
		{Key: "outbox.poll.batch.size", Sections: SectionRelay, Origin: OriginOutboxrelay, Default: "100",
			Doc: "poll mode: rows claimed per batch (one batch is one transaction to the relay)"},
		{Key: "outbox.poll.dispatched.column", Sections: SectionRelay, Origin: OriginOutboxrelay, Default: "dispatched_at",
			Doc: "poll mode: the timestamptz column set to now() once Kafka acknowledged the row; NULL: not yet published"},
		{Key: "outbox.poll.order.column", Sections: SectionRelay, Origin: OriginOutboxrelay, Default: "the event id column (table.field.event.id)",
			Doc: "poll mode: the NOT NULL column that orders one aggregate's events (a bigserial, a UUIDv7 or a timestamp); ties by event id"},
		{Key: "outbox.poll.stuck.after.ms", Sections: SectionRelay, Origin: OriginOutboxrelay, Default: "300000",
			Doc: "poll mode: rows undispatched for longer are counted in outboxrelay_poll_stuck_rows and named in a warning; 0: off"},

		// Kafka producer keys: plain, producer.<key> or producer.override.<key>.
		{Key: "bootstrap.servers", Sections: SectionKafka, Origin: OriginProducer,
			Doc: "Kafka brokers, host:port,...; else --kafka-brokers or KAFKA_BOOTSTRAP_SERVERS"},
		{Key: "client.id", Sections: SectionKafka, Origin: OriginProducer, Doc: "client id sent to the brokers"},
		{Key: "acks", Sections: SectionKafka, Origin: OriginProducer, Default: "all", Doc: "checked only: the slot is confirmed after acks=all",
			Values:  []string{"all", "-1"},
			Instead: "outboxrelay confirms WAL only after every in-sync replica has a record; remove acks or set acks=all"},
		{Key: "linger.ms", Sections: SectionKafka, Origin: OriginProducer, Default: "5", Doc: "how long a batch waits for more records (Connect's producer: 0)"},
		{Key: "batch.size", Sections: SectionKafka, Origin: OriginProducer, Default: "262144", Doc: "most bytes of one partition's batch (Kafka's default: 16384)"},
		{Key: "compression.type", Sections: SectionKafka, Origin: OriginProducer, Default: "none", Doc: "batch compression",
			Values: []string{"none", "gzip", "snappy", "lz4", "zstd"}},
		{Key: "max.request.size", Sections: SectionKafka, Origin: OriginProducer, Default: "1048576", Doc: "largest request, hence record, in bytes"},
		{Key: "request.timeout.ms", Sections: SectionKafka, Origin: OriginProducer, Default: "30000", Doc: "wait for a broker's answer before retrying"},
		{Key: "security.protocol", Sections: SectionKafka, Origin: OriginProducer, Default: "PLAINTEXT", Doc: "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
			Values: []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}},
		{Key: "sasl.mechanism", Sections: SectionKafka, Origin: OriginProducer, Default: "GSSAPI (Kafka); set one of the supported",
			Doc:     "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
			Values:  []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"},
			Instead: "outboxrelay authenticates with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (not GSSAPI or OAUTHBEARER); set sasl.mechanism to one of them"},
		{Key: "sasl.jaas.config", Sections: SectionKafka, Origin: OriginProducer, Secret: true,
			Doc: "username=\"…\" password=\"…\" of the PlainLoginModule or ScramLoginModule"},
		{Key: "sasl.*", Origin: OriginProducer, NoEffect: "not a SASL key outboxrelay reads (is it misspelt?); it authenticates with sasl.mechanism and sasl.jaas.config"},
		{Key: "ssl.truststore.location", Sections: SectionKafka, Origin: OriginProducer, Doc: "PEM file of the CA that signed the brokers' certificates"},
		{Key: "ssl.truststore.type", Sections: SectionKafka, Origin: OriginProducer, Default: "PEM", Doc: "only PEM (convert a JKS or PKCS12 store with keytool -exportcert -rfc)", Values: []string{"PEM"}},
		{Key: "ssl.truststore.password", Sections: SectionKafka, Origin: OriginProducer, Secret: true, Doc: "accepted and unused: a PEM trust store has none"},
		{Key: "ssl.ca.location", Sections: SectionKafka, Origin: OriginProducer, Doc: "same as ssl.truststore.location (librdkafka's name)"},
		{Key: "ssl.keystore.location", Sections: SectionKafka, Origin: OriginProducer, Doc: "PEM file with the client certificate chain and its unencrypted key"},
		{Key: "ssl.keystore.type", Sections: SectionKafka, Origin: OriginProducer, Default: "PEM", Doc: "only PEM", Values: []string{"PEM"}},
		{Key: "ssl.keystore.password", Sections: SectionKafka, Origin: OriginProducer, Secret: true, Doc: "accepted and unused: a PEM key store has none"},
		{Key: "ssl.certificate.location", Sections: SectionKafka, Origin: OriginProducer, Doc: "PEM client certificate chain (librdkafka's name)"},
		{Key: "ssl.key.location", Sections: SectionKafka, Origin: OriginProducer, Doc: "PEM unencrypted client key (librdkafka's name)"},
		{Key: "ssl.key.password", Sections: SectionKafka, Origin: OriginProducer, Secret: true, Doc: "refused: encrypted keys are not supported; decrypt the key (openssl pkey)"},
		{Key: "ssl.truststore.certificates", Origin: OriginProducer, Values: []string{""}, Doc: "refused",
			Instead: "inline PEM is not supported; write the CA certificates to a file and set ssl.truststore.location"},
		{Key: "ssl.keystore.key", Origin: OriginProducer, Secret: true, Values: []string{""}, Doc: "refused",
			Instead: "inline PEM is not supported; write the key to a file and set ssl.key.location (and ssl.certificate.location)"},
		{Key: "ssl.keystore.certificate.chain", Origin: OriginProducer, Values: []string{""}, Doc: "refused",
			Instead: "inline PEM is not supported; write the chain to a file and set ssl.certificate.location"},
		{Key: "ssl.endpoint.identification.algorithm", Sections: SectionKafka, Origin: OriginProducer, Default: "https", Doc: "https: check the broker's host name; empty: do not"},
		{Key: "ssl.*", Origin: OriginProducer, NoEffect: "not a TLS key outboxrelay reads (is it misspelt?)"},
		{Key: "retries", Origin: OriginProducer, NoEffect: retryForever},
		{Key: "delivery.timeout.ms", Origin: OriginProducer, NoEffect: retryForever},
		{Key: "retry.backoff.ms", Sections: SectionKafka, Origin: OriginProducer, Default: "100", Doc: "first wait between produce retries, doubling up to retry.backoff.max.ms; retries never stop"},
		{Key: "retry.backoff.max.ms", Sections: SectionKafka, Origin: OriginProducer, Default: "1000", Doc: "longest wait between produce retries"},
		{Key: "metadata.max.age.ms", Sections: SectionKafka, Origin: OriginProducer, Default: "300000", Doc: "how long a topic's partition count is trusted before it is asked again"},
		{Key: "allow.auto.create.topics", Sections: SectionKafka, Origin: OriginProducer, Default: "true",
			Doc: "without topic.creation.default.*, let the broker create a missing topic when its auto.create.topics.enable allows", Values: bools},
		{Key: "enable.idempotence", Sections: SectionKafka, Origin: OriginProducer, Default: "true",
			Doc: "idempotent producer, as Java's default (Connect's worker sets false since Kafka 3.2, KAFKA-13759): a batch resent after a lost answer is written once; brokers before 2.8 need IDEMPOTENT_WRITE on the cluster; false: producer id -1, such a retry writes it twice (refused with exactly.once.support=required)", Values: bools},
		{Key: "max.in.flight.requests.per.connection", Origin: OriginProducer,
			NoEffect: "outboxrelay keeps one request in flight per partition so that order survives retries (so Java's limit of 5 with enable.idempotence always holds)"},
		{Key: "buffer.memory", Sections: SectionKafka, Origin: OriginProducer, Default: "33554432",
			Doc: "bytes of records sent and not yet acknowledged; at the limit, reading from PostgreSQL pauses (at least max.request.size)"},
		{Key: "max.block.ms", Origin: OriginProducer, NoEffect: "reading from PostgreSQL pauses while Kafka is slow; nothing blocks a send"},
		{Key: "key.serializer", Origin: OriginProducer, NoEffect: "the converters serialize keys and values, as under Connect"},
		{Key: "value.serializer", Origin: OriginProducer, NoEffect: "the converters serialize keys and values, as under Connect"},
		{Key: "partitioner.class", Origin: OriginProducer, Doc: "refused: outboxrelay partitions as Kafka's default partitioner",
			Values:  []string{""},
			Instead: "outboxrelay partitions as Kafka's default partitioner (murmur2 of the serialized key) or by a partition placement; remove partitioner.class"},
	}
}

// lookup returns the table entry for key: the exact entry, else the entry
// whose ".*" prefix is the longest that matches.
func lookup(table []KeyDoc, key string) (KeyDoc, bool) {
	best, found := -1, false
	var doc KeyDoc
	for _, d := range table {
		if d.Key == key {
			return d, true
		}
		prefix, ok := strings.CutSuffix(d.Key, "*")
		if ok && strings.HasPrefix(key, prefix) && len(prefix) > best {
			best, doc, found = len(prefix), d, true
		}
	}
	return doc, found
}
