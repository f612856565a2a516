package ctxindicator

import (
	"strings"
	"testing"
)

// FuzzStripSelfReport checks the promises that hold for any reply: no
// marker means no change, a found marker only ever removes text, and every
// code span of the reply survives byte for byte.
func FuzzStripSelfReport(f *testing.F) {
	for _, seed := range []string{
		"Answer.\n\n[ctx: ~62%]",
		"```\n[ctx: ~1%]\n```\n[ctx: 2%]",
		"a `[ctx: 3%]` b [ctx: 4%] c",
		"[ctx: 5%]",
		"x\n\n[ ctx : ~ 6 % ]\n\ny",
		"````\n```\n[ctx: 7%]\n````\n",
		"\\`[ctx: 8%]`",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		got, pct, ok := StripSelfReport(reply)
		if !ok {
			if got != reply {
				t.Fatalf("no marker, but the reply changed: %q -> %q", reply, got)
			}
			return
		}
		if pct < 0 || pct > 100 || len(got) >= len(reply) {
			t.Fatalf("StripSelfReport(%q) = %q, %d", reply, got, pct)
		}
		for _, sp := range codeSpans(reply) {
			if code := reply[sp.start:sp.end]; !strings.Contains(got, code) {
				t.Fatalf("code %q of %q lost in %q", code, reply, got)
			}
		}
	})
}
