package format

import (
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		v     int
		newer bool
	}{
		{0, false}, // before formats were versioned
		{1, false},
		{Written(), false},
		{Written() + 1, true},
		{Written() + 7, true},
	} {
		err := Check("journal x.jsonl", tc.v)
		if got := errors.Is(err, ErrNewer); got != tc.newer {
			t.Errorf("Check(%d) = %v, want newer %v", tc.v, err, tc.newer)
		}
		if tc.newer && !strings.Contains(err.Error(), "journal x.jsonl is in format") || tc.newer && !strings.Contains(err.Error(), "upgrade this host") {
			t.Errorf("Check(%d) says %q: it should name what and the way out", tc.v, err)
		}
	}
}
