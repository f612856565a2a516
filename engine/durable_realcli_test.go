package engine

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/google/uuid"
)

// TestRealCLIRecovery checks crash recovery against the pinned CLI's own
// transcripts: the uuid cc-connect sends is found there, a finished turn's
// reply is read back and posted without sending the message again, and a
// turn cut at a permission prompt (the CLI killed with its cc-connect) is
// resumed with the continuation prompt when the CLI had written the
// message to its transcript, and sent again when it had not (the CLI
// writes its transcript asynchronously, so a kill can beat the write; the
// message was then never part of the session).
func TestRealCLIRecovery(t *testing.T) {
	tests := []struct {
		name   string
		text   string
		cut    bool
		flush  bool // kill only once the transcript holds the message
		notice string
		reply  string
	}{
		{"finished", "remember kumquat", false, false, "its reply follows", "echo: remember kumquat"},
		{"cut at a permission prompt", "[[TOOL:touch recovered.txt]]", true, false, "", ""},
		{"cut after the transcript write", "[[TOOL:touch recovered.txt]]", true, true, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, api := newRealCLIHarness(t, nil)
			h.stop()
			u := uuid.NewString()
			p, err := agentproc.Start(context.Background(), h.opts.Agent, agentproc.StartOptions{Dir: h.e.routes.pool.normalize(h.ws)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			asked := make(chan struct{})
			var once bool
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, _ = turnWithUUID(context.Background(), p, u, tt.text, func(ev agentproc.Event) {
					if _, ok := ev.(agentproc.PermissionRequest); ok && !once {
						once = true
						close(asked)
					}
				})
			}()
			if tt.cut {
				select {
				case <-asked:
				case <-time.After(waitLimit):
					t.Fatal("no permission request")
				}
				if tt.flush {
					pollFor(t, "the message in the transcript", func() bool {
						path, _, err := agentproc.FindTranscript(agentproc.ConfigDir(h.opts.Agent.Env), p.SessionID())
						has, _ := agentproc.ContainsUUID(path, u)
						return err == nil && has
					})
				}
				_ = syscall.Kill(-p.Pid(), syscall.SIGKILL) // as the kernel does when cc-connect dies
			}
			<-done
			sid := p.SessionID()
			_ = p.Close(context.Background())
			had := true
			if tt.cut {
				path, _, err := agentproc.FindTranscript(agentproc.ConfigDir(h.opts.Agent.Env), sid)
				had = err == nil
				// No transcript at all: the session cannot be resumed, and
				// the one notice says the message goes to a new session.
				tt.notice = "in a new session"
				if had {
					if had, err = agentproc.ContainsUUID(path, u); err != nil {
						t.Fatal(err)
					}
					tt.notice = "may not have reached the agent; sending it now"
				}
				if had {
					tt.notice = "was cut off; resuming it"
				}
				t.Logf("after the kill the transcript holds the message: %v", had)
			}
			stageCutTurn(t, h, conv.Record{SessionID: sid}, u, tt.text)
			before := len(api.Requests())

			h = h.restart()
			h.rec.waitSend(t, tt.notice)
			if tt.reply != "" {
				h.rec.waitSend(t, tt.reply)
			} else {
				// Either the tool is asked for again, or the turn ends.
				calls := h.rec.waitFor(t, "a permission prompt or a reply", func(c []recorded) bool {
					for _, r := range c {
						if r.Kind == "ask" || (r.Kind == "send" && strings.HasPrefix(r.Text, "echo:")) {
							return true
						}
					}
					return false
				})
				for _, r := range calls {
					if r.Kind == "ask" {
						h.press("alice", r.Prompt.RequestID, platform.ChoiceDeny)
						break
					}
				}
			}
			h.waitIdle()
			reqs := api.Requests()[before:]
			continued := false
			for _, r := range reqs {
				if r.Contains(conv.ContinueText) {
					continued = true
				}
			}
			if continued != (tt.cut && had) {
				t.Errorf("continuation sent to the API: %v, want %v (%d requests)", continued, tt.cut && had, len(reqs))
			}
			if !tt.cut && len(reqs) != 0 {
				t.Errorf("%d API requests after the restart, want none: the finished turn must not run again", len(reqs))
			}
			if n := h.pending(t1Key); n != 0 {
				t.Errorf("inbox after recovery: %d pending, want none", n)
			}
			if got := h.rec.sends("cc-connect restarted"); len(got) != 1 || !strings.Contains(got[0], tt.notice) {
				t.Errorf("notices = %q", got)
			}
			if got := h.rec.sends(render.NoticeNotFound); len(got) != 0 {
				t.Errorf("a second notice after the restart one: %q", got)
			}
		})
	}
}
