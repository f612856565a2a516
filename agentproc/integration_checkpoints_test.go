package agentproc_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cc-connect/cc-connect/agentproc"
)

// TestRealCLIRewindFiles: with CheckpointEnv set, RewindFiles to a turn's
// UUID reports (dry run) and then undoes what the turn wrote; without it
// the dry run says why not and the rewind is a ControlError.
func TestRealCLIRewindFiles(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			if on {
				r.cfg.Env[agentproc.CheckpointEnv] = "true"
			}
			p := r.start(t, agentproc.StartOptions{PermissionMode: "acceptEdits"})
			ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
			defer cancel()
			tr, err := p.StartTurn(ctx, agentproc.UserMessage{Text: "[[WRITE:new.txt:a\nb\nc]]"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tr.Wait(nil); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(r.dir, "new.txt")
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("the turn did not write new.txt: %v", err)
			}
			dry, err := p.RewindFiles(ctx, tr.UUID(), true)
			if err != nil {
				t.Fatal(err)
			}
			if !on {
				if dry.CanRewind || dry.Error == "" {
					t.Errorf("dry rewind %+v, want a refusal with its reason", dry)
				}
				var ce *agentproc.ControlError
				if _, err := p.RewindFiles(ctx, tr.UUID(), false); !errors.As(err, &ce) {
					t.Errorf("rewind = %v, want a ControlError", err)
				}
				if _, err := os.Stat(path); err != nil {
					t.Errorf("new.txt after a refused rewind: %v", err)
				}
				return
			}
			if !dry.CanRewind || len(dry.Files) != 1 || dry.Files[0] != path || dry.Deletions != 3 || dry.Inserts != 0 {
				t.Errorf("dry rewind %+v, want new.txt with 3 deletions", dry)
			}
			if res, err := p.RewindFiles(ctx, tr.UUID(), false); err != nil || !res.CanRewind {
				t.Fatalf("rewind = %+v, %v", res, err)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("new.txt after the rewind: %v, want it gone", err)
			}
			d, err := p.WorkspaceDiff(ctx)
			if err != nil || d.NoDiffReason != "no-repository" {
				t.Errorf("WorkspaceDiff outside git = %+v, %v; want no-repository", d, err)
			}
		})
	}
}
