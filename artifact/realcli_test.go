package artifact_test

// Real-CLI tier: the pinned claude CLI (internal/testenv) driven through
// agentproc against the fake Messages API (internal/fakeapi). It checks that
// the bounded prompt reaches the model and that the path it names, relative
// to the workspace, resolves in the CLI's working directory to the whole
// stored message.

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/artifact"
	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

func TestRealCLIReadsTheArtifactByItsRelativePath(t *testing.T) {
	bin := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	home := t.TempDir()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	// The fake API answers the [[TOOL:cmd]] marker (here inside the
	// excerpt) with a Bash call, so the CLI itself lists the stored file
	// from its working directory, the workspace.
	text := "[[TOOL:wc -c .cc-connect/artifacts/*.md]]\n" + strings.Repeat("a long log line\n", 2000)
	prompt, a, stored, err := artifact.NewStore(ws, artifact.Options{}).Prepare(text)
	if err != nil || !stored {
		t.Fatalf("Prepare: stored %v, err %v", stored, err)
	}

	cfg := agentproc.Config{
		Command: bin,
		Env: map[string]string{
			"HOME":               home,
			"CLAUDE_CONFIG_DIR":  filepath.Join(home, ".claude"),
			"ANTHROPIC_BASE_URL": api.URL(),
			"ANTHROPIC_API_KEY":  "test",
			"DISABLE_TELEMETRY":  "1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
			"DISABLE_AUTOUPDATER":                      "1",
		},
		CloseGrace: 10 * time.Second,
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	p, err := agentproc.Start(ctx, cfg, agentproc.StartOptions{Dir: ws}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		closeCtx, closeCancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer closeCancel()
		_ = p.Close(closeCtx)
	}()
	var asked []string
	var res *agentproc.Result
	turn, err := p.StartTurn(ctx, agentproc.UserMessage{Text: prompt})
	if err == nil {
		res, err = turn.Wait(func(e agentproc.Event) {
			if pr, ok := e.(agentproc.PermissionRequest); ok {
				asked = append(asked, pr.ToolName)
				_ = p.RespondPermission(ctx, pr.RequestID, agentproc.PermissionDecision{Behavior: agentproc.Allow})
			}
		})
	}
	if err != nil || res == nil {
		t.Fatalf("turn: %+v, %v\nstderr: %s", res, err, p.StderrTail())
	}
	want := fmt.Sprintf("tool said: %d %s", a.Size, a.RelPath)
	if !strings.HasPrefix(res.Text, want) {
		t.Errorf("result %q, want it to start with %q (permission asked for %v)", res.Text, want, asked)
	}

	// What the model received: the bounded prompt, not the whole message,
	// and no host path.
	first := api.Requests()[0]
	if !first.Contains("path: "+a.RelPath) || first.Contains(strings.Repeat("a long log line\n", 200)) {
		t.Errorf("the model did not get the bounded prompt")
	}
	if first.Contains(ws + "/.cc-connect") {
		t.Errorf("the prompt exposes the workspace's host path")
	}
}
