package confkey

import (
	"strings"
	"testing"
	"time"
)

// TestDeclarations: every declaration is consistent with itself: a numeric
// default lies in its range, a boolean default is a boolean, an enum
// default is one of its values, a key in milliseconds is declared so.
func TestDeclarations(t *testing.T) {
	for _, d := range Keys() {
		if strings.HasSuffix(d.Key, ".ms") && d.Sections != 0 && d.Kind != KindMillis {
			t.Errorf("%s is read and ends in .ms but is declared %s, not milliseconds", d.Key, d.Kind)
		}
		if (d.Min != 0 || d.Max != 0 || d.Unit != "") && !d.Numeric() {
			t.Errorf("%s has a range or unit but is declared %s", d.Key, d.Kind)
		}
		if lo, hi := d.Range(); d.Numeric() && lo > hi {
			t.Errorf("%s: range %d to %d is empty", d.Key, lo, hi)
		}
		if d.Default == "" {
			continue
		}
		if d.NoEffect != "" {
			t.Errorf("%s has no effect yet declares the default %q", d.Key, d.Default)
		}
		switch {
		case d.Kind == KindBool:
			if _, err := ParseBool(d.Default); err != nil {
				t.Errorf("%s: default %q is not a boolean", d.Key, d.Default)
			}
		case d.Numeric():
			if _, reason := d.parseInt(d.Default); reason != "" {
				t.Errorf("%s: default %q %s", d.Key, d.Default, reason)
			}
		case len(d.Values) > 0:
			if v, ok := d.Match(d.Default); !ok || v != d.Default {
				t.Errorf("%s: default %q is not one of %v as written", d.Key, d.Default, d.Values)
			}
		}
	}
}

// Regression (issue 27, item 4): milliseconds were multiplied into a
// time.Duration unchecked, so outbox.retention.ms=18446744073710 became
// 448 µs and 9223372036854775807 became -1 ms, and a refusal named the
// wrong problem ("must be 0 (off) or positive" for a positive value).
// Every number is now checked against its declared range, which for
// milliseconds ends where a Duration does, and the error names the key,
// the value and the range.
func TestMillisRange(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		want       time.Duration
		err        string // "" for none
	}{
		{"outbox.retention.ms", "", 0, ""},
		{"outbox.retention.ms", "604800000", 7 * 24 * time.Hour, ""},
		{"outbox.retention.ms", " 0 ", 0, ""},
		{"outbox.retention.ms", "9223372036854", 9223372036854 * time.Millisecond, ""},
		{"outbox.retention.ms", "9223372036855", 0, `outbox.retention.ms "9223372036855": is out of range; write a number of milliseconds from 0 to 9223372036854`},
		{"outbox.retention.ms", "18446744073710", 0, `outbox.retention.ms "18446744073710": is out of range; write a number of milliseconds from 0 to 9223372036854`},
		// Java's Long.MAX_VALUE: Kafka gives it no meaning of its own for
		// these keys, so it is refused with the range like any value beyond.
		{"outbox.retention.ms", "9223372036854775807", 0, `outbox.retention.ms "9223372036854775807": is out of range`},
		{"outbox.retention.ms", "9223372036854775808", 0, `outbox.retention.ms "9223372036854775808": is out of range`},
		{"outbox.retention.ms", "-1", 0, `outbox.retention.ms "-1": is out of range; write a number of milliseconds from 0 to`},
		{"outbox.retention.ms", "7d", 0, `outbox.retention.ms "7d": is not an integer; write a number of milliseconds from 0 to 9223372036854, e.g. "outbox.retention.ms": "0"`},
		{"outbox.retention.ms", "1.5", 0, `is not an integer`},
		{"linger.ms", "", 5 * time.Millisecond, ""},
		{"outbox.poll.interval.ms", "0", 0, `outbox.poll.interval.ms "0": is out of range; write a number of milliseconds from 1 to 9223372036854, e.g. "outbox.poll.interval.ms": "500"`},
		// A Java int in milliseconds: the range ends at Integer.MAX_VALUE.
		{"heartbeat.interval.ms", "2147483647", 2147483647 * time.Millisecond, ""},
		{"heartbeat.interval.ms", "2147483648", 0, `heartbeat.interval.ms "2147483648": is out of range; write a number of milliseconds from 0 to 2147483647`},
		{"transaction.timeout.ms", "9223372036854775807", 0, `transaction.timeout.ms "9223372036854775807": is out of range; write a number of milliseconds from 1 to 2147483647`},
	} {
		got, err := Read(map[string]string{tc.key: tc.value}).Millis(tc.key)
		checkRead(t, tc.key+"="+tc.value, got, tc.want, err, tc.err)
		if got < 0 {
			t.Errorf("%s=%q: a negative duration %v", tc.key, tc.value, got)
		}
	}
}

// TestIntRange: integers are checked against their declared range, which
// for a Java int ends at Integer.MAX_VALUE, and never wrap.
func TestIntRange(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		want       int64
		err        string
	}{
		{"outbox.poll.batch.size", "", 100, ""},
		{"outbox.poll.batch.size", "10000", 10000, ""},
		{"outbox.poll.batch.size", "10001", 0, `outbox.poll.batch.size "10001": is out of range; write a number of rows from 1 to 10000, e.g. "outbox.poll.batch.size": "100"`},
		{"outbox.poll.batch.size", "0", 0, `is out of range; write a number of rows from 1 to 10000`},
		{"batch.size", "2147483647", 2147483647, ""},
		{"batch.size", "2147483648", 0, `batch.size "2147483648": is out of range; write a number of bytes from 0 to 2147483647`},
		{"buffer.memory", "9223372036854775807", 9223372036854775807, ""},
		{"buffer.memory", "9223372036854775808", 0, `buffer.memory "9223372036854775808": is out of range; write a number of bytes from 0 to 9223372036854775807`},
		{"errors.max.retries", "", -1, ""},
		{"errors.max.retries", "-2", 0, `errors.max.retries "-2": is out of range; write an integer from -1 to 2147483647, e.g. "errors.max.retries": "-1"`},
		{"slot.max.retries", "many", 0, `slot.max.retries "many": is not an integer; write an integer from 0 to 2147483647, e.g. "slot.max.retries": "6"`},
		{"offsets.storage.replication.factor", "32768", 0, `is out of range; write an integer from -1 to 32767`},
		{"topic.creation.default.partitions", "", 0, ""}, // no default: unset
	} {
		got, err := Read(map[string]string{tc.key: tc.value}).Int(tc.key)
		checkRead(t, tc.key+"="+tc.value, got, tc.want, err, tc.err)
	}
}

// checkRead reports a read that failed, or succeeded, unlike wanted;
// wantErr "" means no error, else a part of the message.
func checkRead[T comparable](t *testing.T, what string, got, want T, err error, wantErr string) {
	t.Helper()
	switch {
	case wantErr == "" && err != nil:
		t.Errorf("%s: %v", what, err)
	case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
		t.Errorf("%s: err %v, want it to contain %q", what, err, wantErr)
	case wantErr == "" && got != want:
		t.Errorf("%s: %v, want %v", what, got, want)
	}
}

// TestReaders: booleans, enums and text through their declarations, with
// an alias for the EventRouter's keys.
func TestReaders(t *testing.T) {
	v := Read(map[string]string{
		"slot.failover": " TRUE ", "slot.drop.on.stop": "yes", "security.protocol": "sasl_ssl", "compression.type": "brotli",
		"transforms.outbox.table.expand.json.payload": "true", "slot.name": "  ",
	})
	if b, err := v.Bool("slot.failover"); err != nil || !b {
		t.Errorf("slot.failover: %v, %v", b, err)
	}
	if _, err := v.Bool("slot.drop.on.stop"); err == nil || err.Error() != `slot.drop.on.stop "yes": is not a boolean; write true or false` {
		t.Errorf("slot.drop.on.stop: %v", err)
	}
	if b, err := v.Bool("enable.idempotence"); err != nil || !b {
		t.Errorf("enable.idempotence unset: %v, %v; want the declared true", b, err)
	}
	if s, err := v.Enum("security.protocol"); err != nil || s != "SASL_SSL" {
		t.Errorf("security.protocol: %q, %v; want the declared spelling", s, err)
	}
	if _, err := v.Enum("compression.type"); err == nil || !strings.Contains(err.Error(), `compression.type "brotli": is not supported; write one of none, gzip, snappy, lz4, zstd`) {
		t.Errorf("compression.type: %v", err)
	}
	if s, err := v.Text("slot.name"); err != nil || s != "debezium" {
		t.Errorf("blank slot.name: %q, %v; want the declared default", s, err)
	}
	if b, err := v.Alias("outbox").Bool("transforms.<alias>.table.expand.json.payload"); err != nil || !b {
		t.Errorf("aliased key: %v, %v", b, err)
	}
	if _, err := v.Text("no.such.key"); err == nil || !strings.Contains(err.Error(), "not declared") {
		t.Errorf("undeclared key: %v", err)
	}
}
