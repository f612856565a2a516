package agentproc_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/agentproc"
)

// TestRealCLIBashSeesNoSecrets: an allowed user asks Claude to run printenv
// and approves the prompt. The real CLI runs it with Bash; what it sends
// back to the API (and so to the chat) must hold no platform token and no
// credential the default agent.env_drop names, while the agent's own
// settings from agent.env (its API endpoint and key) still reach it.
func TestRealCLIBashSeesNoSecrets(t *testing.T) {
	const platformToken, ghToken = "xoxb-canary-9f3e1d", "ghp_canary_7a2b"
	t.Setenv("CCX_SLACK_BOT_TOKEN", platformToken)
	t.Setenv("CCX_PLAIN_SECRET_HOLDER", platformToken) // not a token name: only the platform rule catches its name
	t.Setenv("GITHUB_TOKEN", ghToken)
	t.Setenv("CCX_VISIBLE", "passes-through")
	r := newRig(t)
	r.cfg.EnvDrop = agentproc.DefaultEnvDrop
	r.cfg.Secrets = agentproc.NewSecretVars("CCX_SLACK_BOT_TOKEN", "CCX_PLAIN_SECRET_HOLDER")
	p := r.start(t, agentproc.StartOptions{})

	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()
	res, err := runTurn(ctx, p, "[[TOOL:printenv]]", func(e agentproc.Event) {
		if pr, ok := e.(agentproc.PermissionRequest); ok {
			_ = p.RespondPermission(ctx, pr.RequestID, agentproc.PermissionDecision{Behavior: agentproc.Allow})
		}
	})
	if err != nil || res == nil {
		t.Fatalf("turn: %+v, %v\nstderr: %s", res, err, p.StderrTail())
	}
	var output string
	for _, req := range r.api.Requests() {
		for _, tr := range req.ToolResults {
			output += tr.Content + "\n"
		}
	}
	if !strings.Contains(output, "CCX_VISIBLE=passes-through") {
		t.Fatalf("the tool result does not look like printenv's output (did Bash run?):\n%s", output)
	}
	for _, leaked := range []string{platformToken, ghToken} {
		if strings.Contains(output, leaked) {
			t.Errorf("the tool result sent to the API holds %q", leaked)
		}
	}
	for _, want := range []string{"ANTHROPIC_BASE_URL=" + r.api.URL(), "ANTHROPIC_API_KEY=test"} {
		if !strings.Contains(output, want) {
			t.Errorf("the agent's own setting %q from agent.env did not reach its Bash", want)
		}
	}
}
