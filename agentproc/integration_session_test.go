package agentproc_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/google/uuid"
)

// The real-CLI tier (see integration_test.go) for sessions: resume, fork,
// ids, transcripts and compaction.

func TestRealCLIResume(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	first := r.start(t, agentproc.StartOptions{})
	mustTurn(t, first, "remember alpha", "echo: remember alpha")
	id := first.SessionID()
	closeProc(t, first)

	second := r.start(t, agentproc.StartOptions{ResumeID: id})
	res, _ := mustTurn(t, second, "and beta", "echo: and beta")
	if res.SessionID != id || second.SessionID() != id {
		t.Errorf("resumed session id %q (process %q), want %s", res.SessionID, second.SessionID(), id)
	}
	reqs := r.api.Requests()
	last := reqs[len(reqs)-1]
	if !last.Contains("remember alpha") || !last.Contains("echo: remember alpha") {
		t.Error("the resumed process's request lacks the first process's turn")
	}
}

func TestRealCLIResumeUnknown(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	p := r.start(t, agentproc.StartOptions{ResumeID: uuid.NewString()})
	res, _, err := turn(t, p, "anyone there")
	if !errors.Is(err, agentproc.ErrSessionNotFound) {
		t.Fatalf("turn on an unknown session: result %+v, err %v; want ErrSessionNotFound (driver/CLI mismatch)\nstderr: %s",
			res, err, p.StderrTail())
	}
	if n := len(r.api.Requests()); n != 0 {
		t.Errorf("API saw %d requests for an unknown session", n)
	}
}

func TestRealCLIFork(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	orig := r.start(t, agentproc.StartOptions{})
	mustTurn(t, orig, "fork base", "echo: fork base")
	id := orig.SessionID()
	closeProc(t, orig)
	path, _, err := agentproc.FindTranscript(r.configDir, id, r.dir)
	if err != nil {
		t.Fatal(err)
	}
	before := sha(t, path)

	fork := r.start(t, agentproc.StartOptions{ResumeID: id, Fork: true})
	res, _ := mustTurn(t, fork, "on the fork", "echo: on the fork")
	closeProc(t, fork)

	if res.SessionID == id || uuid.Validate(res.SessionID) != nil || fork.SessionID() != res.SessionID {
		t.Errorf("fork session id %q (process %q), want a new uuid, not %s", res.SessionID, fork.SessionID(), id)
	}
	if sha(t, path) != before {
		t.Error("forking changed the original transcript")
	}
	if _, _, err := agentproc.FindTranscript(r.configDir, res.SessionID, r.dir); err != nil {
		t.Errorf("fork transcript: %v", err)
	}
	reqs := r.api.Requests()
	if !reqs[len(reqs)-1].Contains("fork base") {
		t.Error("the fork's request lacks the original history")
	}
}

func TestRealCLIPromptTooLong(t *testing.T) {
	t.Parallel()
	t.Run("fresh", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		p := r.start(t, agentproc.StartOptions{})
		res, _, err := turn(t, p, "[[TOOLONG]] huge")
		if !errors.Is(err, agentproc.ErrPromptTooLong) {
			t.Fatalf("err %v, want ErrPromptTooLong (driver/CLI mismatch)", err)
		}
		if res == nil || !res.IsError || res.TerminalReason != "prompt_too_long" || res.ContextTokens != 0 {
			t.Errorf("result %+v, want is_error, terminal_reason prompt_too_long and no context figure", res)
		}
		// The session is poisoned (errors.go): the failed prompt stays in
		// the history and the next, harmless one fails with it.
		if _, _, err := turn(t, p, "harmless"); !errors.Is(err, agentproc.ErrPromptTooLong) {
			t.Errorf("next turn in the same session: %v, want ErrPromptTooLong again", err)
		}
	})
	t.Run("later turn", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		p := r.start(t, agentproc.StartOptions{})
		mustTurn(t, p, "small first", "echo: small first")
		// Every call fails, compaction attempts too: the CLI gives up with
		// "Prompt is too long" (PROTOCOL.md §7).
		r.api.SetMode(fakeapi.ModeTooLong)
		res, _, err := turn(t, p, "second")
		if !errors.Is(err, agentproc.ErrPromptTooLong) {
			t.Fatalf("err %v (result %+v), want ErrPromptTooLong (driver/CLI mismatch)", err, res)
		}
		// The process survives; once the API accepts again the next turn
		// goes through (the failed prompt is merged into it).
		r.api.SetMode(fakeapi.ModeNormal)
		res, _, err = turn(t, p, "third")
		if err != nil || res == nil || res.IsError || res.Text != "echo: third" {
			t.Errorf("turn after prompt too long: result %+v, err %v", res, err)
		}
	})
}

func TestRealCLISessionIDAndAppendedPrompt(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	id := uuid.NewString()
	r.cfg.AppendSystemPrompt = "FIRST_MARKER"
	first := r.start(t, agentproc.StartOptions{SessionID: id})
	res, _ := mustTurn(t, first, "hi", "echo: hi")
	closeProc(t, first)
	if res.SessionID != id {
		t.Errorf("session id %q, want the one given, %s", res.SessionID, id)
	}
	reqs := r.api.Requests()
	if sys := reqs[0].System; len(sys) == 0 || !strings.HasSuffix(sys[len(sys)-1], "FIRST_MARKER") {
		t.Errorf("appended prompt not at the end of the system blocks: %q", sys)
	}

	// A changed prompt must reach a resumed session (the driver passes
	// --system-prompt-snapshot off; §8).
	r.cfg.AppendSystemPrompt = "SECOND_MARKER"
	second := r.start(t, agentproc.StartOptions{ResumeID: id})
	mustTurn(t, second, "again", "echo: again")
	reqs = r.api.Requests()
	last := reqs[len(reqs)-1]
	if !last.Contains("SECOND_MARKER") || last.Contains("FIRST_MARKER") {
		t.Errorf("resumed session's system blocks %q: want the new appended prompt only", last.System)
	}
}

func TestRealCLIReactiveCompaction(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	p := r.start(t, agentproc.StartOptions{})
	mustTurn(t, p, "one", "echo: one")
	mustTurn(t, p, "two", "echo: two")
	// Only the next call fails: the CLI compacts the history, retries the
	// prompt and the turn succeeds in the same session (PROTOCOL.md §7).
	r.api.SetModeOnce(fakeapi.ModeTooLong)
	res, evs := mustTurn(t, p, "three", "echo: three")

	var got []string
	for _, e := range evs {
		switch e := e.(type) {
		case agentproc.Compaction:
			got = append(got, fmt.Sprintf("compaction active=%v result=%s", e.Active, e.Result))
		case agentproc.CompactBoundary:
			got = append(got, "boundary "+e.Trigger)
			if e.PreTokens <= 0 {
				t.Errorf("compact boundary pre_tokens %d", e.PreTokens)
			}
		}
	}
	want := []string{"compaction active=true result=", "compaction active=false result=success", "boundary auto"}
	if !slices.Equal(got, want) {
		t.Errorf("compaction events %q, want %q (driver/CLI mismatch on system/status or compact_boundary)", got, want)
	}
	reqs := r.api.Requests()
	if res.ContextTokens != reqs[len(reqs)-1].Usage.ContextTokens() {
		t.Errorf("ContextTokens %d after compaction, want the retried call's %d", res.ContextTokens, reqs[len(reqs)-1].Usage.ContextTokens())
	}
	if res.SessionID != p.SessionID() {
		t.Errorf("session changed by compaction: %s vs %s", res.SessionID, p.SessionID())
	}
}

func TestRealCLITranscriptPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		dir     string
		symlink bool // start the CLI through a symlink to dir
	}{
		{"punctuation", "My Proj@v2+x~y#z", false},
		{"non-ascii", "ünï_cødé emoji😀x", false},
		{"over 200 chars", strings.Repeat("L", 230), false},
		{"through a symlink", "real_target", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			dir := filepath.Join(filepath.Dir(r.dir), tt.dir)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			cwd := dir
			if tt.symlink {
				cwd = filepath.Join(filepath.Dir(r.dir), "link_to_real")
				if err := os.Symlink(dir, cwd); err != nil {
					t.Fatal(err)
				}
			}
			p := r.start(t, agentproc.StartOptions{Dir: cwd})
			res, _ := mustTurn(t, p, "where", "echo: where")
			want := agentproc.TranscriptPath(r.configDir, cwd, res.SessionID)
			if _, err := os.Stat(want); err != nil {
				entries, _ := filepath.Glob(filepath.Join(agentproc.ProjectsDir(r.configDir), "*", res.SessionID+".jsonl"))
				t.Errorf("transcript not at %s (%v); the CLI wrote %q", want, err, entries)
			}
		})
	}
}

func TestRealCLIResumeFromOtherDir(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	first := r.start(t, agentproc.StartOptions{})
	mustTurn(t, first, "started here", "echo: started here")
	id := first.SessionID()
	closeProc(t, first)

	other := filepath.Join(filepath.Dir(r.dir), "other_dir")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	second := r.start(t, agentproc.StartOptions{Dir: other, ResumeID: id})
	res, _ := mustTurn(t, second, "moved", "echo: moved")
	closeProc(t, second)
	if res.SessionID != id {
		t.Errorf("session id %s after resuming elsewhere, want %s", res.SessionID, id)
	}
	// The CLI keeps writing to the first project's file (§5), so the
	// lookup from the new cwd must fall back to searching.
	path, _, err := agentproc.FindTranscript(r.configDir, id, other)
	if err != nil || path != agentproc.TranscriptPath(r.configDir, r.dir, id) {
		t.Errorf("FindTranscript from the new cwd: %s, %v; want the original project's file", path, err)
	}
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "moved") {
		t.Errorf("original transcript lacks the resumed turn (%v)", err)
	}
}
