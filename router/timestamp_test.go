package router

import (
	"testing"
	"time"
)

// TestParsePGTimestamp pins parsePGTimestamp over the forms PostgreSQL
// prints and the text it must refuse.
func TestParsePGTimestamp(t *testing.T) {
	utc := func(y, mo, d, h, mi, s, ns int) time.Time {
		return time.Date(y, time.Month(mo), d, h, mi, s, ns, time.UTC)
	}
	tests := []struct {
		in       string
		withZone bool
		want     time.Time // zero: refused
	}{
		{"2025-03-14 09:26:53", false, utc(2025, 3, 14, 9, 26, 53, 0)},
		{"2025-03-14 09:26:53.123456", false, utc(2025, 3, 14, 9, 26, 53, 123456000)},
		{"2025-03-14 09:26:53.1", false, utc(2025, 3, 14, 9, 26, 53, 100000000)},
		{"2025-03-14 09:26:53.1234567891", false, utc(2025, 3, 14, 9, 26, 53, 123456789)}, // past nine digits: dropped
		{"12025-03-14 09:26:53", false, utc(12025, 3, 14, 9, 26, 53, 0)},
		{"2016-12-31 23:59:60", false, utc(2017, 1, 1, 0, 0, 0, 0)}, // a leap second rolls over
		{"2025-03-14 09:26:53+00", true, utc(2025, 3, 14, 9, 26, 53, 0)},
		{"2025-03-14 15:56:53.5+05:30", true, utc(2025, 3, 14, 10, 26, 53, 500000000)},
		{"2025-03-14 01:26:53-08", true, utc(2025, 3, 14, 9, 26, 53, 0)},
		{"1900-01-01 00:00:00+00:19:32", true, utc(1899, 12, 31, 23, 40, 28, 0)},
		{"1900-01-01 00:00:00-00:19:32", true, utc(1900, 1, 1, 0, 19, 32, 0)},

		{"", false, time.Time{}},
		{"infinity", false, time.Time{}},
		{"-infinity", true, time.Time{}},
		{"2025-03-14 09:26:53 BC", false, time.Time{}},
		{"025-03-14 09:26:53", false, time.Time{}},
		{"12345678-03-14 09:26:53", false, time.Time{}},
		{"2025-3-14 09:26:53", false, time.Time{}},
		{"2025-03-14T09:26:53", false, time.Time{}},
		{"2025-03-14 09:26", false, time.Time{}},
		{"2025-03-14 09:26:53.", false, time.Time{}},
		{"2025-03-14 09:26:53.x", false, time.Time{}},
		{"2025-13-14 09:26:53", false, time.Time{}},
		{"2025-00-14 09:26:53", false, time.Time{}},
		{"2025-03-32 09:26:53", false, time.Time{}},
		{"2025-03-00 09:26:53", false, time.Time{}},
		{"2025-03-14 24:26:53", false, time.Time{}},
		{"2025-03-14 09:60:53", false, time.Time{}},
		{"2025-03-14 09:26:61", false, time.Time{}},
		{"2025-03-14 09:26:53+00", false, time.Time{}}, // an offset on timestamp
		{"2025-03-14 09:26:53", true, time.Time{}},     // none on timestamptz
		{"2025-03-14 09:26:53+5", true, time.Time{}},
		{"2025-03-14 09:26:53+05:3", true, time.Time{}},
		{"2025-03-14 09:26:53+05:30:", true, time.Time{}},
		{"2025-03-14 09:26:53+05:30:1", true, time.Time{}},
		{"2025-03-14 09:26:53+05:30:10:00", true, time.Time{}},
		{"2025-03-14 09:26:53 ", false, time.Time{}},
	}
	for _, tt := range tests {
		got, err := parsePGTimestamp([]byte(tt.in), tt.withZone)
		switch {
		case tt.want.IsZero() && err == nil:
			t.Errorf("parsePGTimestamp(%q, %v) = %v, want an error", tt.in, tt.withZone, got)
		case !tt.want.IsZero() && err != nil:
			t.Errorf("parsePGTimestamp(%q, %v): %v", tt.in, tt.withZone, err)
		case !got.Equal(tt.want):
			t.Errorf("parsePGTimestamp(%q, %v) = %v, want %v", tt.in, tt.withZone, got, tt.want)
		}
	}
}

// TestParsePGTimestampNoAllocs pins that parsing allocates nothing.
func TestParsePGTimestampNoAllocs(t *testing.T) {
	b := []byte("2025-03-14 15:56:53.589793+05:30")
	if n := testing.AllocsPerRun(100, func() { _, _ = parsePGTimestamp(b, true) }); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}
