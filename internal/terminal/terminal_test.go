package terminal

import (
	"errors"
	"fmt"
	"testing"
)

func TestMarks(t *testing.T) {
	fenced := Final(errors.New("fenced"))
	aborted := Session(errors.New("aborted"))
	for _, c := range []struct {
		name           string
		err            error
		final, session bool
	}{
		{"nil", nil, false, false},
		{"unmarked", errors.New("x"), false, false},
		{"final", fenced, true, false},
		{"final, wrapped", fmt.Errorf("exactly-once: %w", fenced), true, false},
		{"session, wrapped", fmt.Errorf("%w: broker said no", aborted), false, true},
		{"the outermost mark decides", Session(fmt.Errorf("aborted: %w", fenced)), false, true},
	} {
		if got := IsFinal(c.err); got != c.final {
			t.Errorf("%s: IsFinal = %v, want %v", c.name, got, c.final)
		}
		if got := IsSession(c.err); got != c.session {
			t.Errorf("%s: IsSession = %v, want %v", c.name, got, c.session)
		}
	}
	if Final(nil) != nil || Session(nil) != nil {
		t.Error("a nil error must stay nil")
	}
	if !errors.Is(fmt.Errorf("w: %w", fenced), fenced) || fenced.Error() != "fenced" {
		t.Error("a mark must keep the error's identity and text")
	}
}
