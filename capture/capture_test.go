package capture

import "testing"

func TestLSNText(t *testing.T) {
	for _, tc := range []struct {
		text string
		lsn  LSN
	}{
		{"0/0", 0},
		{"16/B374D848", 0x16_B374D848},
		{"FFFFFFFF/FFFFFFFF", 1<<64 - 1},
	} {
		if got := tc.lsn.String(); got != tc.text {
			t.Errorf("LSN(%#x).String() = %q, want %q", uint64(tc.lsn), got, tc.text)
		}
		got, err := ParseLSN(tc.text)
		if err != nil || got != tc.lsn {
			t.Errorf("ParseLSN(%q) = %#x, %v; want %#x", tc.text, uint64(got), err, uint64(tc.lsn))
		}
	}
	for _, bad := range []string{"", "16", "x/1", "/1"} {
		if _, err := ParseLSN(bad); err == nil {
			t.Errorf("ParseLSN(%q) accepted it", bad)
		}
	}
}
