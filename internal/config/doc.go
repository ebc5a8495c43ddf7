// Package config loads the Debezium connector JSON that users register with
// Kafka Connect and splits it into the parts of the relay that read it: the
// router (EventRouter and converters), the PostgreSQL side (connection, slot,
// publication, snapshot), the Kafka producer, and the relay's own keys
// (retries and errors, the offsets topic, exactly-once, poll mode, the
// janitor), by the sections each key's declaration names.
//
// Loading is pure: no network. It reads only regular files of bounded
// size (ReadFile: a FIFO or a device is refused before it is opened). It
// resolves Kafka's config providers
// (${env:NAME}, ${file:path:key}) because passwords usually come from them,
// warns once per key that has no effect, and refuses, with what to write
// instead, every value outboxrelay knows but cannot honour. The one table of
// known keys is internal/confkey's (Keys), which also generates the key
// reference in docs/configuration.md. A Redactor keeps the secrets of the
// loaded file out of every log record (Redactor.Handler).
package config
