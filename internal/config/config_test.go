package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// noEnv is an empty environment.
func noEnv(string) (string, bool) { return "", false }

// envOf returns an environment holding m.
func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// minimal is a valid bare config map; tests add or override keys.
func minimal(extra string) string {
	base := `"topic.prefix": "p", "database.hostname": "h", "database.user": "u", "database.dbname": "d",
		"plugin.name": "pgoutput", "table.include.list": "public.outbox"`
	if extra != "" {
		base += ", " + extra
	}
	return "{" + base + "}"
}

// checkErr fails unless err is non-nil and its text holds every one of want.
func checkErr(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

func mustParse(t *testing.T, doc string, env func(string) (string, bool)) *Config {
	t.Helper()
	c, err := Parse([]byte(doc), "test.json", env)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

func TestFixtureLoadsUnchanged(t *testing.T) {
	for _, path := range []string{"testdata/connector.json", "../../testdata/connector.json"} {
		t.Run(path, func(t *testing.T) {
			// Both fixtures are part of the repository: a missing one
			// fails here (Load names the path) instead of skipping.
			c, err := Load(path, noEnv)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if len(c.Warnings) != 0 {
				t.Errorf("warnings: %q", c.Warnings)
			}
			if c.Name != "pg-outbox-connector.order_db.public" {
				t.Errorf("Name = %q", c.Name)
			}
			want := map[string]map[string]string{
				"Router": {
					"transforms.outbox.table.expand.json.payload": "true", // JSON true
					"transforms.outbox.route.topic.replacement":   "${routedByValue}",
					"topic.prefix":          "order_db",
					"decimal.handling.mode": "string",
				},
				"Postgres": {
					"plugin.name":       "pgoutput",
					"snapshot.mode":     "no_data",
					"database.password": "debezium@123",
					"topic.prefix":      "order_db",
				},
				"Kafka": {
					"topic.creation.default.partitions":         "1",
					"topic.creation.default.replication.factor": "1",
				},
			}
			got := map[string]map[string]string{"Router": c.Router, "Postgres": c.Postgres, "Kafka": c.Kafka}
			for section, kv := range want {
				for k, v := range kv {
					if got[section][k] != v {
						t.Errorf("%s[%q] = %q, want %q", section, k, got[section][k], v)
					}
				}
			}
			if !reflect.DeepEqual(c.Secrets, []string{"debezium@123"}) {
				t.Errorf("Secrets = %q", c.Secrets)
			}
		})
	}
}

func TestScalars(t *testing.T) {
	tests := []struct {
		json    string
		want    string
		wantErr string
	}{
		{`"text"`, "text", ""},
		{`true`, "true", ""},
		{`false`, "false", ""},
		{`1`, "1", ""},
		{`-1`, "-1", ""},
		{`1.50`, "1.50", ""},
		{`1e3`, "1e3", ""},
		// Regression (issue 27, item 10): an explicitly empty value of a
		// key with a default was read as the default.
		{`""`, "", `heartbeat.interval.ms: is empty: remove the key to get its default "0"`},
		{`null`, "", "heartbeat.interval.ms: is null"},
		{`[1,2]`, "", "heartbeat.interval.ms: is a JSON array"},
		{`{"a":1}`, "", "heartbeat.interval.ms: is a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.json, func(t *testing.T) {
			c, err := Parse([]byte(minimal(`"heartbeat.interval.ms": `+tt.json)), "test.json", noEnv)
			if tt.wantErr != "" {
				checkErr(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Postgres["heartbeat.interval.ms"]; got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDocumentShapes(t *testing.T) {
	wrapped := func(top string) string {
		return `{"name": "n", "config": ` + minimal("") + top + `}`
	}
	tests := []struct {
		name     string
		doc      string
		wantName string
		wantErr  string
		warning  string            // a warning that must be present
		kafka    map[string]string // expected Config.Kafka entries
	}{
		{name: "bare map", doc: minimal(""), wantName: ""},
		{name: "bare map with name", doc: minimal(`"name": "x"`), wantName: "x"},
		{name: "wrapped", doc: wrapped(""), wantName: "n"},
		{name: "wrapped, same name inside", doc: `{"name": "n", "config": ` + minimal(`"name": "n"`) + `}`, wantName: "n"},
		{name: "wrapped, other name inside", doc: `{"name": "n", "config": ` + minimal(`"name": "m"`) + `}`, wantErr: `name: config's name "m" differs from the top-level name "n"`},
		{name: "top-level worker keys", doc: wrapped(`, "bootstrap.servers": "k:9092", "security.protocol": "SSL", "ssl.truststore.location": "/ca.pem", "producer.override.linger.ms": "2"`),
			wantName: "n", kafka: map[string]string{"bootstrap.servers": "k:9092", "security.protocol": "SSL", "ssl.truststore.location": "/ca.pem", "linger.ms": "2"}},
		{name: "config wins over top level", doc: `{"bootstrap.servers": "top:1", "config": ` + minimal(`"bootstrap.servers": "in:1"`) + `}`,
			warning: `key "bootstrap.servers" is set both at the top level and in config`, kafka: map[string]string{"bootstrap.servers": "in:1"}},
		{name: "Connect REST output keys", doc: wrapped(`, "tasks": [], "type": "source"`), wantName: "n", warning: `top-level key "tasks": ignored`},
		{name: "unknown top-level key", doc: wrapped(`, "database.hostname": "x"`), wantName: "n", warning: `unknown top-level key "database.hostname"`},
		{name: "duplicate key", doc: minimal(`"slot.name": "a", "slot.name": "b"`), warning: `key "slot.name" appears more than once in the top-level object`},
		{name: "top-level name not a string", doc: `{"name": 1, "config": ` + minimal("") + `}`, wantErr: "name: the top-level name must be a JSON string"},
		{name: "config not an object", doc: `{"name": "n", "config": "x"}`, wantErr: `reading "config"`},
		{name: "array document", doc: `[]`, wantErr: "not a JSON object"},
		{name: "empty file", doc: ``, wantErr: "test.json: file is empty: write the connector JSON"},
		{name: "trailing data", doc: minimal("") + `{}`, wantErr: "unexpected data after the top-level object"},
		{name: "syntax error", doc: `{"a": }`, wantErr: "test.json: reading connector JSON: line 1, column 7: invalid character '}'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.doc), "test.json", noEnv)
			if tt.wantErr != "" {
				checkErr(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Name != tt.wantName {
				t.Errorf("Name = %q, want %q", c.Name, tt.wantName)
			}
			if tt.warning != "" && !containsWarning(c.Warnings, tt.warning) {
				t.Errorf("no warning containing %q in %q", tt.warning, c.Warnings)
			}
			for k, v := range tt.kafka {
				if c.Kafka[k] != v {
					t.Errorf("Kafka[%q] = %q, want %q", k, c.Kafka[k], v)
				}
			}
		})
	}
}

func containsWarning(warnings []string, s string) bool {
	for _, w := range warnings {
		if strings.Contains(w, s) {
			return true
		}
	}
	return false
}

func TestKafkaPrecedence(t *testing.T) {
	tests := []struct {
		name, keys, want string
	}{
		{"plain only", `"linger.ms": "1"`, "1"},
		{"producer beats plain", `"linger.ms": "1", "producer.linger.ms": "2"`, "2"},
		{"override beats producer", `"producer.override.linger.ms": "3", "producer.linger.ms": "2", "linger.ms": "1"`, "3"},
		{"override beats plain", `"linger.ms": "1", "producer.override.linger.ms": "3"`, "3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, minimal(tt.keys), noEnv)
			if got := c.Kafka["linger.ms"]; got != tt.want {
				t.Errorf("linger.ms = %q, want %q", got, tt.want)
			}
			for k := range c.Kafka {
				if strings.HasPrefix(k, "producer.") {
					t.Errorf("Kafka holds the unstripped key %q", k)
				}
			}
		})
	}
}

func TestSections(t *testing.T) {
	c := mustParse(t, minimal(`"errors.max.retries": "5", "retriable.restart.connector.wait.ms": "100",
		"errors.tolerance": "all", "errors.deadletterqueue.topic.name": "dlq", "key.converter.schemas.enable": "false",
		"extended.headers.enabled": "true", "heartbeat.interval.ms": "1000", "slot.drop.on.stop": "true",
		"producer.override.sasl.mechanism": "SCRAM-SHA-512", "database.sslmode": "verify-full",
		"allow.auto.create.topics": "false", "metadata.max.age.ms": "60000", "retry.backoff.max.ms": "5000",
		"buffer.memory": "67108864", "topic.creation.default.cleanup.policy": "compact", "ssl.ca.location": "/ca.pem",
		"database.sslpassword": "x"`), noEnv)
	tests := []struct {
		section map[string]string
		name    string
		key     string
		present bool
	}{
		{c.Relay, "Relay", "errors.max.retries", true},
		{c.Postgres, "Postgres", "errors.max.retries", true},
		{c.Relay, "Relay", "retriable.restart.connector.wait.ms", true},
		{c.Relay, "Relay", "errors.tolerance", true},
		{c.Kafka, "Kafka", "errors.deadletterqueue.topic.name", true},
		{c.Relay, "Relay", "errors.deadletterqueue.topic.name", false},
		{c.Router, "Router", "key.converter.schemas.enable", true},
		{c.Router, "Router", "extended.headers.enabled", true},
		{c.Router, "Router", "topic.prefix", true},
		{c.Postgres, "Postgres", "topic.prefix", true},
		{c.Postgres, "Postgres", "heartbeat.interval.ms", true},
		{c.Postgres, "Postgres", "slot.drop.on.stop", true},
		{c.Postgres, "Postgres", "database.sslmode", true},
		{c.Kafka, "Kafka", "sasl.mechanism", true},
		{c.Kafka, "Kafka", "allow.auto.create.topics", true},
		{c.Kafka, "Kafka", "metadata.max.age.ms", true},
		{c.Kafka, "Kafka", "retry.backoff.max.ms", true},
		{c.Kafka, "Kafka", "buffer.memory", true},
		{c.Kafka, "Kafka", "topic.creation.default.cleanup.policy", true},
		{c.Kafka, "Kafka", "ssl.ca.location", true},
		{c.Postgres, "Postgres", "database.sslpassword", true},
		{c.Router, "Router", "plugin.name", false},
		{c.Kafka, "Kafka", "plugin.name", false},
	}
	for _, tt := range tests {
		if _, ok := tt.section[tt.key]; ok != tt.present {
			t.Errorf("%s has %q: %v, want %v", tt.name, tt.key, ok, tt.present)
		}
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings: %q", c.Warnings)
	}
}

func TestWarnings(t *testing.T) {
	tests := []struct {
		key, value, want string
	}{
		{"no.such.key", "1", `unknown key "no.such.key": ignored; Debezium's PostgreSQL connector does not define it either`},
		{"time.precision.mode", "connect", `key "time.precision.mode" has no effect on outbox events: it shapes Debezium's change-event envelope`},
		{"max.batch.size", "2048", `key "max.batch.size" has no effect on outbox events: it tunes Kafka Connect's task queue`},
		{"producer.override.retries", "3", `key "producer.override.retries" has no effect on outbox events: outboxrelay retries Kafka sends forever`},
		{"producer.override.no.such", "3", `unknown key "producer.override.no.such": ignored; "no.such" is not a Kafka producer setting`},
		{"producer.database.password", "x", `unknown key "producer.database.password"`},
		{"column.mask.with.12.chars", "public.outbox.remark", `key "column.mask.with.12.chars" has no effect`},
		{"table.whitelist", "public.outbox", "removed in Debezium 2.0; write table.include.list"},
		{"admin.override.bootstrap.servers", "k:1", "topics with the producer's connection settings"},
		// Misspelt keys of namespaces outboxrelay reads: warned, not passed on.
		{"database.sslmod", "verify-full", `key "database.sslmod" has no effect on outbox events: not a connection key outboxrelay reads (is it misspelt?`},
		{"slot.drop.on.stp", "true", "not a slot key outboxrelay reads (is it misspelt?)"},
		{"ssl.truststore.locaton", "/ca.pem", "not a TLS key outboxrelay reads (is it misspelt?)"},
		{"sasl.jaas.confg", "x", "not a SASL key outboxrelay reads (is it misspelt?)"},
		{"errors.tolerence", "all", "it reads no other errors.* key (is it misspelt?)"},
		{"heartbeat.interval", "1000", "not a heartbeat key outboxrelay reads (is it misspelt?)"},
		{"value.converter.schemas.enabled", "false", "JsonConverter takes schemas.enable, the schema-registry converters the keys listed here (is the key misspelt?)"},
		{"database.initial.statements", "SET x=1", "runs no statements of its own"},
		{"errors.deadletterqueue.context.headers.enable", "true", "always adds the __connect.errors.* context headers"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			c := mustParse(t, minimal(`"`+tt.key+`": "`+tt.value+`"`), noEnv)
			if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], tt.want) {
				t.Errorf("warnings = %q, want one containing %q", c.Warnings, tt.want)
			}
			for _, m := range []map[string]string{c.Router, c.Postgres, c.Kafka, c.Relay} {
				if _, ok := m[tt.key]; ok {
					t.Errorf("ignored key %q reached a section", tt.key)
				}
			}
		})
	}
}

func TestUnsupported(t *testing.T) {
	tests := []struct {
		name, keys string
		want       []string // each must appear in the error
	}{
		{"decoderbufs", `"plugin.name": "decoderbufs"`, []string{`plugin.name: "decoderbufs" is not supported: outboxrelay decodes only pgoutput; set plugin.name=pgoutput`}},
		{"wal2json", `"plugin.name": "wal2json"`, []string{"set plugin.name=pgoutput"}},
		{"other connector", `"connector.class": "io.debezium.connector.mysql.MySqlConnector"`, []string{"connector.class", "set connector.class=io.debezium.connector.postgresql.PostgresConnector"}},
		{"two tasks", `"tasks.max": 2`, []string{"tasks.max: 2 tasks are not supported", "set tasks.max=1"}},
		{"zero tasks", `"tasks.max": "0"`, []string{`tasks.max: "0" is not a positive integer`}},
		{"tasks not a number", `"tasks.max": "many"`, []string{"tasks.max", "set tasks.max=1"}},
		{"snapshot custom", `"snapshot.mode": "custom"`, []string{`snapshot.mode: "custom" is not supported`, "initial, no_data"}},
		{"snapshot recovery", `"snapshot.mode": "recovery"`, []string{"snapshot.mode"}},
		{"publication mode", `"publication.autocreate.mode": "some"`, []string{"publication.autocreate.mode", "write disabled"}},
		{"protobuf keys", `"key.converter": "io.confluent.connect.protobuf.ProtobufConverter"`, []string{"key.converter", "no ProtobufConverter"}},
		{"registry SASL_INHERIT", `"value.converter.basic.auth.credentials.source": "SASL_INHERIT"`, []string{"value.converter.basic.auth.credentials.source", "SASL_INHERIT", "USER_INFO"}},
		{"bytes values", `"value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"`, []string{"value.converter"}},
		{"header converter", `"header.converter": "org.apache.kafka.connect.json.JsonConverter"`, []string{"header.converter", "SimpleHeaderConverter"}},
		{"acks=1", `"producer.override.acks": "1"`, []string{"producer.override.acks", "set acks=all"}},
		{"gssapi", `"sasl.mechanism": "GSSAPI"`, []string{"sasl.mechanism", "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"}},
		{"compression", `"compression.type": "brotli"`, []string{"compression.type", "zstd"}},
		{"security protocol", `"security.protocol": "TLS"`, []string{"security.protocol"}},
		{"predicates", `"predicates": "p", "predicates.p.type": "x"`, []string{"predicates: is not supported", "predicates.p.type: is not supported"}},
		{"partitioner", `"producer.override.partitioner.class": "x.RoundRobinPartitioner"`, []string{"partitioner.class"}},
		{"flush.lsn.source", `"flush.lsn.source": false`, []string{"flush.lsn.source"}},
		{"exactly once", `"exactly.once.support": "enabled"`, []string{"exactly.once.support", "requested, required"}},
		{"snapshot overrides", `"snapshot.select.statement.overrides": "public.outbox"`, []string{"snapshot.select.statement.overrides"}},
		{"bad enum", `"errors.tolerance": "some"`, []string{"errors.tolerance", "write one of none, all"}},
		{"class names are case-sensitive", `"key.converter": "org.apache.kafka.connect.storage.stringconverter"`, []string{"key.converter"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(minimal(tt.keys)), "test.json", noEnv)
			checkErr(t, err, tt.want...)
			if c == nil {
				t.Error("validation errors must still return the Config for its warnings")
			}
			var ke *KeyError
			if !errors.As(err, &ke) {
				t.Errorf("error is not a *KeyError: %T", err)
			}
		})
	}
}

func TestAcceptedValues(t *testing.T) {
	for _, keys := range []string{
		`"snapshot.mode": "INITIAL"`, `"snapshot.mode": "schema_only"`, `"snapshot.mode": "never"`, `"snapshot.mode": "when_needed"`,
		`"publication.autocreate.mode": "filtered"`, `"publication.autocreate.mode": "no_tables"`,
		`"acks": "-1"`, `"acks": "all"`, `"security.protocol": "sasl_ssl"`, `"tasks.max": 1`,
		`"connector.class": "io.debezium.connector.postgresql.PostgresConnector"`,
		`"value.converter": "org.apache.kafka.connect.storage.StringConverter"`,
		`"key.converter": "org.apache.kafka.connect.json.JsonConverter"`,
		`"predicates": ""`, `"exactly.once.support": "requested"`, `"exactly.once.support": "required"`, `"transaction.boundary": "interval"`,
	} {
		if _, err := Parse([]byte(minimal(keys)), "test.json", noEnv); err != nil {
			t.Errorf("%s: %v", keys, err)
		}
	}
}

func TestAllErrorsCollected(t *testing.T) {
	_, err := Parse([]byte(`{"plugin.name": "decoderbufs", "tasks.max": "3", "snapshot.mode": "custom",
		"database.password": "${env:NOPE}", "slot.name": null}`), "test.json", noEnv)
	if err == nil {
		t.Fatal("no error")
	}
	for _, key := range []string{"plugin.name", "tasks.max", "snapshot.mode", "database.password", "slot.name",
		"topic.prefix: is missing", "database.hostname: is missing", "database.user: is missing",
		"database.dbname: is missing", "table.include.list: is missing"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error does not mention %q:\n%v", key, err)
		}
	}
	if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != 10 {
		t.Errorf("%d errors, want 10:\n%v", n, err)
	}
}

func TestMissingPluginName(t *testing.T) {
	// Debezium's default plugin is decoderbufs: a config without plugin.name
	// runs decoderbufs under Connect, which outboxrelay cannot read.
	doc := strings.Replace(minimal(""), `"plugin.name": "pgoutput",`, "", 1)
	_, err := Parse([]byte(doc), "test.json", noEnv)
	checkErr(t, err, "plugin.name: is missing: outboxrelay decodes only pgoutput")
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestProviders(t *testing.T) {
	props := writeFile(t, "secrets.properties", strings.Join([]string{
		"# a comment",
		"! another comment",
		"  db.password = s3cret",
		"colon: with colon",
		"spaced value",
		"trailing=kept ",
		`continued=one\`,
		`    two`,
		`escaped\=key=a\tb\u0041`,
		"empty=",
		"dup=first",
		"dup=second",
		"url=jdbc:postgresql://h:5432/d",
	}, "\n"))
	env := envOf(map[string]string{"PGPASS": "envpass", "HOST": "db", "PORT": "5433", "EMPTY": ""})
	tests := []struct {
		value, want string
	}{
		{"${env:PGPASS}", "envpass"},
		{"${env:EMPTY}", ""},
		{"${env:HOST}:${env:PORT}", "db:5433"},
		{"pre-${env:HOST}-post", "pre-db-post"},
		{"${file:" + props + ":db.password}", "s3cret"},
		{"${file:" + props + ":colon}", "with colon"},
		{"${file:" + props + ":spaced}", "value"},
		{"${file:" + props + ":trailing}", "kept "},
		{"${file:" + props + ":continued}", "onetwo"},
		{"${file:" + props + ":escaped=key}", "a\tbA"},
		{"${file:" + props + ":empty}", ""},
		{"${file:" + props + ":dup}", "second"},
		{"${file:" + props + ":url}", "jdbc:postgresql://h:5432/d"},
		{"${env:HOST}/${file:" + props + ":db.password}", "db/s3cret"},
		{"${routedByValue}", "${routedByValue}"},
		{"outbox.${routedByValue}.${env:HOST}", "outbox.${routedByValue}.db"},
		{"${vault:secret/x:y}", "${vault:secret/x:y}"},
		{"$${env:HOST}", "$db"},
		{"no reference", "no reference"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			c := mustParse(t, minimal(`"heartbeat.action.query": "`+tt.value+`"`), env)
			if got := c.Postgres["heartbeat.action.query"]; got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestProviderErrors(t *testing.T) {
	props := writeFile(t, "p.properties", "present=topsecret\n")
	broken := writeFile(t, "broken.properties", "present=topsecret\nbad=\\u00zz topsecret\n")
	dir := t.TempDir()
	tests := []struct {
		value string
		want  []string
	}{
		{"${env:NOPE}", []string{"database.password: ${env:NOPE}: environment variable NOPE is not set"}},
		{"${env:}", []string{"database.password: ${env:}: names no variable"}},
		{"${env:NOPE", []string{"database.password: ${env: is not closed by }"}},
		{"${file:" + props + ":absent}", []string{"database.password: ${file:" + props + `:absent}: key "absent" is not in ` + props}},
		{"${file:/no/such/file.properties:k}", []string{"database.password: ${file:/no/such/file.properties:k}", "no such file"}},
		{"${file:" + props + "}", []string{"needs a path and a key"}},
		{"${file:" + dir + ":k}", []string{"is not a regular file"}},
		{"${file:" + broken + ":present}", []string{"line 2: malformed \\uXXXX escape"}},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			_, err := Parse([]byte(minimal(`"database.password": "`+tt.value+`"`)), "test.json", noEnv)
			checkErr(t, err, tt.want...)
			if strings.Contains(err.Error(), "topsecret") {
				t.Errorf("error shows file content: %v", err)
			}
		})
	}
}

func TestSecrets(t *testing.T) {
	env := envOf(map[string]string{"PW": "p\"w\\1x"})
	c := mustParse(t, minimal(`"database.password": "${env:PW}",
		"producer.override.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"bob\" password=\"jaaspw\";",
		"ssl.truststore.password": "trustpw", "producer.ssl.key.password": "keypw1", "database.sslpassword": "sslpw1",
		"database.custom.password": "custompw", "slot.name": "not-secret"`), env)
	for _, s := range []string{"p\"w\\1x", "jaaspw", "trustpw", "keypw1", "sslpw1", "custompw"} {
		found := false
		for _, got := range c.Secrets {
			found = found || got == s
		}
		if !found {
			t.Errorf("secret %q not collected: %q", s, c.Secrets)
		}
	}
	for _, s := range c.Secrets {
		if s == "not-secret" || s == "bob" {
			t.Errorf("%q is not a secret", s)
		}
	}
	red := c.Redacted()
	for _, k := range []string{"database.password", "producer.override.sasl.jaas.config", "ssl.truststore.password", "producer.ssl.key.password", "database.sslpassword", "database.custom.password"} {
		if red[k] != "[redacted]" {
			t.Errorf("Redacted()[%q] = %q", k, red[k])
		}
	}
	if red["slot.name"] != "not-secret" || red["topic.prefix"] != "p" {
		t.Errorf("Redacted hides plain values: %v", red)
	}
	tests := []struct{ in, want string }{
		{"login failed for jaaspw", "login failed for [redacted]"},
		{`password "p\"w\\1x" rejected`, `password "[redacted]" rejected`}, // as %q prints it
		{"p\"w\\1x raw", "[redacted] raw"},
		{"keypw1 and trustpw", "[redacted] and [redacted]"},
		{"nothing here", "nothing here"},
	}
	for _, tt := range tests {
		if got := c.Scrub(tt.in); got != tt.want {
			t.Errorf("Scrub(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestJAASOption(t *testing.T) {
	tests := []struct{ in, want string }{
		{`x.PlainLoginModule required username="u" password="p w";`, "p w"},
		{`x.PlainLoginModule required password=bare;`, "bare"},
		{`x required user_password="no" password = "yes";`, "yes"},
		{`x required username="u";`, ""},
		// Regression (issue 27, item 6): an escaped quote ended the value
		// here while sink's parser, which authenticates, reads on, so the
		// real password was not on the scrub list.
		{`x required username="u" password="pa\"ss\\word";`, `pa"ss\word`},
		{`x required password="first" password="second";`, "second"},
		{`x required username="password=\"no\"" password="yes";`, "yes"},
		// Unterminated: sink refuses it (no password), and the whole
		// value of the secret key is on the scrub list.
		{`password="unterminated`, ""},
	}
	for _, tt := range tests {
		if got := JAASOption(tt.in, "password"); got != tt.want {
			t.Errorf("JAASOption(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestSecretsNeverInErrors feeds bad inputs that carry secrets, in secret
// keys and elsewhere, and checks no error message shows one.
func TestSecretsNeverInErrors(t *testing.T) {
	const secret = "Hunter2-Secret"
	file := writeFile(t, "p.properties", "pw="+secret+"\n")
	broken := writeFile(t, "broken.properties", "broken=\\uZZZZ"+secret+"\n")
	env := envOf(map[string]string{"PW": secret})
	docs := []string{
		minimal(`"database.password": "` + secret + `", "plugin.name": "decoderbufs"`),
		minimal(`"database.password": "` + secret + `", "tasks.max": "` + secret + `"`),
		minimal(`"database.password": "${env:PW}", "snapshot.mode": "${env:PW}"`),
		minimal(`"database.password": "${file:` + file + `:pw}", "sasl.mechanism": "${file:` + file + `:pw}"`),
		minimal(`"database.password": "${file:` + broken + `:broken}"`),
		minimal(`"database.password": "${file:` + file + `:missing}"`),
		minimal(`"database.password": ["` + secret + `"]`),
		minimal(`"database.password": {"v": "` + secret + `"}`),
		minimal(`"ssl.key.password": "` + secret + `", "acks": "` + secret + `"`),
		minimal(`"producer.override.sasl.jaas.config": "m required password=\"` + secret + `\";", "compression.type": "` + secret + `"`),
		`{"name": "n", "config": ` + minimal(`"database.password": "`+secret+`", "name": "`+secret+`"`) + `}`,
		`{"database.password": "` + secret + `", "plugin.name": }`,
		`{"database.password": "` + secret + `"} trailing`,
		`{"database.password": "` + secret + `\q"}`,
	}
	for i, doc := range docs {
		path := writeFile(t, "connector.json", doc)
		_, err := Load(path, env)
		if err == nil {
			t.Errorf("doc %d: no error", i)
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "Hunter2") {
			t.Errorf("doc %d: error shows the secret: %v", i, err)
		}
	}
}

func TestSetDefaultBrokers(t *testing.T) {
	envWith := envOf(map[string]string{"KAFKA_BOOTSTRAP_SERVERS": "env:9092"})
	tests := []struct {
		name, file, flag string
		env              func(string) (string, bool)
		want, wantErr    string
	}{
		{"flag beats file", `"bootstrap.servers": "file:9092"`, "flag:9092", envWith, "flag:9092", ""},
		{"file beats env", `"bootstrap.servers": "file:9092"`, "", envWith, "file:9092", ""},
		{"producer override in file", `"producer.override.bootstrap.servers": "file:9092"`, "", envWith, "file:9092", ""},
		{"env as last resort", ``, "", envWith, "env:9092", ""},
		{"none", ``, "", noEnv, "", "pass --kafka-brokers"},
		{"empty env is unset", ``, "", envOf(map[string]string{"KAFKA_BOOTSTRAP_SERVERS": " "}), "", "KAFKA_BOOTSTRAP_SERVERS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, minimal(tt.file), noEnv)
			err := c.SetDefaultBrokers(tt.flag, tt.env)
			if tt.wantErr != "" {
				checkErr(t, err, "--kafka-brokers", "bootstrap.servers in test.json", "KAFKA_BOOTSTRAP_SERVERS")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Kafka["bootstrap.servers"]; got != tt.want {
				t.Errorf("bootstrap.servers = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestKeysTable(t *testing.T) {
	keys := Keys()
	seen := map[string]bool{}
	for _, d := range keys {
		if seen[d.Key] {
			t.Errorf("%q listed twice", d.Key)
		}
		seen[d.Key] = true
		if d.Origin == "" {
			t.Errorf("%q has no origin", d.Key)
		}
		if d.Doc == "" && d.NoEffect == "" {
			t.Errorf("%q has neither Doc nor NoEffect", d.Key)
		}
		if d.NoEffect != "" && (d.Sections != 0 || d.Required || len(d.Values) > 0) {
			t.Errorf("%q has no effect yet feeds a section or is checked", d.Key)
		}
		if d.Required && d.Instead == "" {
			t.Errorf("required %q does not say what to write", d.Key)
		}
	}
	// Keys hands out a copy: changing it changes nothing for Parse.
	keys[0].Key = "changed"
	if Keys()[0].Key == "changed" {
		t.Error("Keys returns shared state")
	}
}

func TestParseProperties(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]string
	}{
		{"a=1\r\nb = 2\r\n", map[string]string{"a": "1", "b": "2"}},
		{"key\\ with\\ spaces = v", map[string]string{"key with spaces": "v"}},
		{"a:b:c", map[string]string{"a": "b:c"}},
		{"onlykey", map[string]string{"onlykey": ""}},
		{"  # indented comment\n\n\t!x\n", map[string]string{}},
		{"a=ends with backslash\\", map[string]string{"a": "ends with backslash"}},
		{"a=double\\\\\nb=2", map[string]string{"a": "double\\", "b": "2"}},
	}
	for _, tt := range tests {
		got, err := parseProperties([]byte(tt.in))
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile("testdata/connector.json"); err == nil {
		f.Add(data)
	}
	f.Add([]byte(minimal(`"database.password": "${env:PW}", "x": null`)))
	f.Add([]byte(`{"name":"n","config":{"a":[1]},"bootstrap.servers":"k"}`))
	f.Add([]byte(`{"a":"${env:PW}${file:/nonexistent:k}${","b":1.5e3}`))
	env := envOf(map[string]string{"PW": "pw"})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "fuzz.json", env)
		if c == nil {
			if err == nil {
				t.Fatal("nil Config without an error")
			}
			return
		}
		for k, v := range c.Redacted() {
			if c.secretKeys[k] && v != "[redacted]" {
				t.Fatalf("Redacted shows secret key %q", k)
			}
		}
		for _, s := range c.Secrets {
			// "[redacted]" itself may hold a short secret ("a"); only
			// secrets that share no letter with it can be told apart.
			if err != nil && !strings.ContainsAny(s, "[redact]") && strings.Contains(err.Error(), s) {
				t.Fatalf("error shows the secret %q: %v", s, err)
			}
			if got := c.Scrub(s); !strings.ContainsAny(s, "[redact]") && strings.Contains(got, s) {
				t.Fatalf("Scrub(%q) = %q", s, got)
			}
		}
		_ = c.SetDefaultBrokers("", noEnv)
	})
}
