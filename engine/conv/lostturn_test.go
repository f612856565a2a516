package conv

import (
	"testing"

	"github.com/cc-connect/cc-connect/platform"
)

// TestLostTurnNamesEveryMessage: the notice of a turn that cannot be
// recovered quotes its own message and each follow-up steered into it.
func TestLostTurnNamesEveryMessage(t *testing.T) {
	steered := func(texts ...string) []workItem {
		var out []workItem
		for _, s := range texts {
			out = append(out, workItem{msg: platform.Message{Text: s}})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		with []workItem
		want string
	}{
		{"alone", nil, "“check the build”"},
		{"one follow-up", steered("use the other file"), "“check the build” and the message added to it while it ran (“use the other file”)"},
		{"two follow-ups", steered("use the other file", "and skip the tests"),
			"“check the build” and the messages added to it while it ran (“use the other file”, “and skip the tests”)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lostTurn("check the build", tc.with); got != tc.want {
				t.Errorf("lostTurn = %q, want %q", got, tc.want)
			}
		})
	}
}
