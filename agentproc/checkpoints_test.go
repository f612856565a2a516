package agentproc

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRewindFilesFake: RewindFiles against the fake claude, which imitates
// captures/checkpoints: a dry run counts what a rewind to the turn's
// message would change, the rewind restores an edited file and deletes a
// created one, a second rewind changes nothing, and without checkpointing
// the dry run says why not and the rewind is a ControlError.
func TestRewindFilesFake(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			e := newFakeEnv(t)
			if on {
				e.env[CheckpointEnv] = "true"
			}
			kept := filepath.Join(e.dir, "kept.txt")
			if err := os.WriteFile(kept, []byte("old\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			p := e.start(StartOptions{})
			ctx := testCtx(t)
			first := "11111111-2222-4333-8444-555555555555"
			if _, err := runTurnUUID(ctx, p, first, "[[WRITE:new.txt:a\nb\nc]] [[WRITE:kept.txt:new]]", nil); err != nil {
				t.Fatal(err)
			}
			created := filepath.Join(e.dir, "new.txt")
			dry, err := p.RewindFiles(ctx, first, true)
			if err != nil {
				t.Fatal(err)
			}
			if !on {
				var ce *ControlError
				if dry.CanRewind || dry.Error == "" {
					t.Errorf("dry run %+v, want a refusal with its reason", dry)
				}
				if _, err := p.RewindFiles(ctx, first, false); !errors.As(err, &ce) {
					t.Errorf("rewind = %v, want a ControlError", err)
				}
				if _, err := os.Stat(created); err != nil {
					t.Errorf("new.txt after a refused rewind: %v", err)
				}
				return
			}
			if !dry.CanRewind || !slices.Equal(dry.Files, []string{created, kept}) || dry.Deletions != 4 || dry.Inserts != 1 {
				t.Errorf("dry run %+v, want both files, 4 lines removed and 1 added", dry)
			}
			for range 2 {
				if r, err := p.RewindFiles(ctx, first, false); err != nil || !r.CanRewind {
					t.Fatalf("rewind = %+v, %v", r, err)
				}
				if _, err := os.Stat(created); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("new.txt after the rewind: %v, want it gone", err)
				}
				if b, err := os.ReadFile(kept); err != nil || string(b) != "old\n" {
					t.Errorf("kept.txt after the rewind: %q, %v", b, err)
				}
			}
			var ce *ControlError
			if _, err := p.RewindFiles(ctx, "99999999-2222-4333-8444-555555555555", true); !errors.As(err, &ce) {
				t.Errorf("rewind to an unknown message = %v, want a ControlError", err)
			}
		})
	}
}
