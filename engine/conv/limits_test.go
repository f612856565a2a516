package conv

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
)

// TestLimitBookBackoff: without a reported reset the waits double from
// the first up to the cap, a window's reset keeps the back-off for the
// next refusal, a turn that goes through forgets it, and a reported reset
// wins; the book reads back what it wrote (0600).
func TestLimitBookBackoff(t *testing.T) {
	now := time.Date(2026, 12, 7, 17, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	b := newLimitBook(dir, func() time.Time { return now }, slog.New(slog.DiscardHandler))
	steps := []struct {
		name  string
		do    func() limitWindow
		want  time.Duration // Until - now
		known bool
	}{
		{"first refusal", func() limitWindow { return b.refused("L", time.Time{}) }, 5 * time.Minute, false},
		{"inside the window", func() limitWindow { return b.refused("L", time.Time{}) }, 5 * time.Minute, false},
		{"after the reset", func() limitWindow { b.reopen("L", b.windows["L"]); return b.refused("L", time.Time{}) }, 10 * time.Minute, false},
		{"doubles again", func() limitWindow { b.reopen("L", b.windows["L"]); return b.refused("L", time.Time{}) }, 20 * time.Minute, false},
		{"capped", func() limitWindow {
			for range 4 {
				b.reopen("L", b.windows["L"])
				b.refused("L", time.Time{})
			}
			return b.windows["L"]
		}, time.Hour, false},
		{"a turn went through", func() limitWindow {
			b.reopen("L", b.windows["L"])
			b.ok("L")
			return b.refused("L", time.Time{})
		}, 5 * time.Minute, false},
		{"reported reset", func() limitWindow { return b.refused("L", now.Add(3*time.Hour)) }, 3 * time.Hour, true},
	}
	for _, s := range steps {
		w := s.do()
		if w.Until.Sub(now) != s.want || w.Known != s.known {
			t.Fatalf("%s: window %+v, want %v ahead (known %v)", s.name, w, s.want, s.known)
		}
	}
	if _, closed := b.closed("other"); closed {
		t.Error("another login is held by L's window")
	}
	b.park("u1")
	fi, err := os.Stat(filepath.Join(dir, "limits", "windows.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the file: %v %v, want 0600", fi, err)
	}
	b2 := newLimitBook(dir, func() time.Time { return now }, slog.New(slog.DiscardHandler))
	if w, closed := b2.closed("L"); !closed || !w.Known || w.Until.Sub(now) != 3*time.Hour || !b2.isParked("u1") {
		t.Fatalf("read back: %+v %v parked %v", w, closed, b2.isParked("u1"))
	}
}

// TestLoginOf: the login is the credentials' and the config folder's,
// not the model's or the prompt's.
func TestLoginOf(t *testing.T) {
	base := agentproc.Config{Command: "claude", Env: map[string]string{"ANTHROPIC_API_KEY": "k1"}}
	other := base
	other.Model, other.AppendSystemPrompt = "opus", "be brief"
	if loginOf(base) != loginOf(other) {
		t.Error("the model or the prompt changed the login")
	}
	key2 := base
	key2.Env = map[string]string{"ANTHROPIC_API_KEY": "k2"}
	dir := base
	dir.Env = map[string]string{"ANTHROPIC_API_KEY": "k1", "CLAUDE_CONFIG_DIR": "/x"}
	if loginOf(base) == loginOf(key2) || loginOf(base) == loginOf(dir) {
		t.Error("another key or config folder shares the login")
	}
}
