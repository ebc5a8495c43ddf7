package outbox

import (
	"testing"
	"time"
)

func TestUUIDv7(t *testing.T) {
	now := time.UnixMilli(0x0189_2A4B_5C6D)
	id := newUUIDv7(now)
	if len(id) != 36 || id[:13] != "01892a4b-5c6d" || id[14] != '7' || !isUUID(id) {
		t.Fatalf("newUUIDv7 = %s; want 01892a4b-5c6d-7xxx-…", id)
	}
	if v := id[19]; v != '8' && v != '9' && v != 'a' && v != 'b' {
		t.Errorf("variant nibble %c, want 8, 9, a or b", v)
	}
	if a, b := newUUIDv7(now), newUUIDv7(now.Add(time.Millisecond)); a >= b {
		t.Errorf("ids are not time-ordered: %s then %s", a, b)
	}
}

func TestIsUUID(t *testing.T) {
	for s, want := range map[string]bool{
		"01892a4b-5c6d-7abc-8def-0123456789ab":   true,
		"01892A4B5C6D7ABC8DEF0123456789AB":       true,
		"{01892a4b-5c6d-7abc-8def-0123456789ab}": true,
		"01892a4b-5c6d-7abc-8def-0123456789a":    false,
		"01892a4b--5c6d-7abc-8def-0123456789ab":  false,
		"-01892a4b-5c6d-7abc-8def-0123456789ab":  false,
		"order-1":                                false,
	} {
		if got := isUUID(s); got != want {
			t.Errorf("isUUID(%q) = %t, want %t", s, got, want)
		}
	}
}
