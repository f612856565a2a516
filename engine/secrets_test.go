package engine

import (
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/agentproc"
)

// TestShellEnvHoldsNoSecrets: an admin's `!sh env` runs with the agent's
// environment, so its output (posted in the chat and told to Claude) holds
// no platform token and nothing agent.env_drop names, while agent.env
// still arrives.
func TestShellEnvHoldsNoSecrets(t *testing.T) {
	const platformToken, cloudKey = "xoxb-canary-4c1d", "aws-canary-77"
	t.Setenv("CCX_SLACK_BOT_TOKEN", platformToken)
	t.Setenv("AWS_SECRET_ACCESS_KEY", cloudKey)
	t.Setenv("CCX_VISIBLE", "passes-through")
	h := shellHarness(t, func(o *Options) {
		o.Agent.Env = map[string]string{"CCX_GIVEN": "from-agent-env"}
		o.Agent.EnvDrop = agentproc.DefaultEnvDrop
		o.Agent.Secrets = agentproc.NewSecretVars("CCX_SLACK_BOT_TOKEN")
	})
	h.say("alice", "T1", "!sh env")
	got := h.rec.waitSend(t, "exit 0 in")
	for _, want := range []string{"CCX_VISIBLE=passes-through", "CCX_GIVEN=from-agent-env"} {
		if !strings.Contains(got.Text, want) {
			t.Errorf("!sh env output lacks %q:\n%s", want, got.Text)
		}
	}
	h.waitIdle()
	h.say("alice", "T1", "what did env say?")
	h.rec.waitSend(t, "echo: ")
	h.waitIdle()
	told := strings.Join(h.fa.history(sess1), "\n")
	if !strings.Contains(told, "CCX_VISIBLE=passes-through") {
		t.Errorf("Claude was not told the output:\n%s", told)
	}
	for _, leaked := range []string{platformToken, cloudKey} {
		if strings.Contains(got.Text, leaked) || strings.Contains(told, leaked) {
			t.Errorf("%q reached the chat or Claude", leaked)
		}
	}
}
