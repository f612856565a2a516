package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/lease"
)

// TestFailureNoticesNameNoHostPath drives the engine's failure paths and
// scans what they post: everyone in a thread reads it, so no notice may
// name the state dir, the workspace or any other host path (the log keeps
// them). Before, several posted the error whole, path included.
func TestFailureNoticesNameNoHostPath(t *testing.T) {
	hold := func(t *testing.T, h *harness, sid string) {
		t.Helper()
		l, err := lease.Session(h.opts.StateDir, sid)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Release() })
	}
	tests := []struct {
		name   string
		real   bool // the real driver and the fake claude binary
		shell  bool // the binding allows !sh
		run    func(t *testing.T, h *harness) *harness
		notice string // what the failure posts
	}{
		{"corrupt session record", false, false, func(t *testing.T, h *harness) *harness {
			writeFile(t, conv.NewStore(h.opts.StateDir).Path(t1Key), "{not json")
			h.say("alice", "T1", "hello")
			return h
		}, "Stored state for this conversation was unreadable"},
		{"corrupt inbox journal", false, false, func(t *testing.T, h *harness) *harness {
			writeFile(t, conv.InboxPath(h.opts.StateDir, t1Key), "garbage\n"+`{"op":"ack","id":"x"}`+"\n")
			h.say("alice", "T1", "hello")
			return h
		}, "message journal could not be read"},
		{"workspace gone", true, false, func(t *testing.T, h *harness) *harness {
			if err := os.RemoveAll(h.ws); err != nil {
				t.Fatal(err)
			}
			h.say("alice", "T1", "hello")
			return h
		}, "The agent failed"},
		{"side question cannot start", true, false, func(t *testing.T, h *harness) *harness {
			h.say("alice", "T1", "hello")
			h.rec.waitSend(t, "echo: hello")
			h.waitIdle()
			if err := os.RemoveAll(h.ws); err != nil {
				t.Fatal(err)
			}
			h.say("alice", "T1", "!btw what was that?")
			return h
		}, "(side answer) could not start"},
		{"session held by another process", true, false, func(t *testing.T, h *harness) *harness {
			h.say("alice", "T1", "hello")
			h.rec.waitSend(t, "echo: hello")
			h.waitIdle()
			sid := h.e.convs.Lookup(t1Key).Record().SessionID
			h.e.convs.Lookup(t1Key).Reap()
			// The lease is dropped once the reaped process has exited;
			// nothing signals that but the lock itself.
			pollFor(t, "the reaped process to drop its session lease", func() bool {
				l, err := lease.Session(h.opts.StateDir, sid)
				if err != nil {
					return false
				}
				t.Cleanup(func() { l.Release() })
				return true
			})
			h.say("alice", "T1", "again")
			return h
		}, "The agent failed"},
		{"recovery of a cut turn held elsewhere", true, false, func(t *testing.T, h *harness) *harness {
			h.stop()
			sid, u := uuid.NewString(), uuid.NewString()
			stageCutTurn(t, h, conv.Record{SessionID: sid}, u, "the cut turn")
			hold(t, h, sid)
			return h.restart()
		}, "could not be recovered"},
		{"sessions cannot be listed", true, false, func(t *testing.T, h *harness) *harness {
			cfgDir := h.opts.Agent.Env["CLAUDE_CONFIG_DIR"]
			writeFile(t, agentproc.ProjectDir(cfgDir, h.e.routes.pool.normalize(h.ws)), "not a folder")
			h.say("alice", "T1", "!sessions")
			return h
		}, "Could not list sessions"},
		{"shell command cannot run", false, true, func(t *testing.T, h *harness) *harness {
			if err := os.RemoveAll(h.ws); err != nil {
				t.Fatal(err)
			}
			h.say("alice", "T1", "!sh ls")
			return h
		}, "could not run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h *harness
			shell := func(o *Options) { o.Bindings[0].AllowShell = tt.shell }
			if tt.real {
				h, _ = newRealHarness(t, nil, shell)
			} else {
				h = newHarness(t, func(o *Options, _ *harnessConfig) { shell(o) })
			}
			state, ws := h.opts.StateDir, h.ws
			h = tt.run(t, h)
			h.rec.waitSend(t, tt.notice)
			h.waitIdle()
			for _, c := range h.rec.snapshot() {
				for _, p := range []string{state, ws, os.TempDir() + "/"} {
					if strings.Contains(c.Text, p) {
						t.Errorf("%s %q names the host path %s", c.Kind, c.Text, p)
					}
				}
			}
		})
	}
}

// writeFile writes content at path, creating its folder private.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
