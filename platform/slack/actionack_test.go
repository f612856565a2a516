package slack

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

// heldActions is a handler whose HandleAction waits for the test to say
// what it returns.
type heldActions struct {
	*platformtest.Handler
	got    chan platform.Action
	result chan error
}

func (h *heldActions) HandleAction(ctx context.Context, a platform.Action) error {
	h.got <- a
	select {
	case err := <-h.result:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestButtonAckWaitsForTheHandlerInACluster: with AckHandledOnly (a
// cluster host, whose handler publishes the press to the cluster's
// stream) a button press is acked only once the handler took it, and not
// at all when it failed; a lone host acks it at once, before the handler.
func TestButtonAckWaitsForTheHandlerInACluster(t *testing.T) {
	for _, tt := range []struct {
		name        string
		handledOnly bool
	}{{"lone host", false}, {"cluster host", true}} {
		t.Run(tt.name, func(t *testing.T) {
			f := fakeslack.New(t)
			cfg := testConfig(f)
			cfg.AckHandledOnly = tt.handledOnly
			a, logs, _ := newAdapter(t, cfg)
			h := &heldActions{Handler: platformtest.NewHandler(), got: make(chan platform.Action, 1), result: make(chan error)}
			platformtest.Run(t, 10*time.Second, func(ctx context.Context) error { return a.Run(ctx, h) })
			f.WaitConn(t, 1)
			logs.waitFor(t, "Slack connected")
			to := platform.Target{Platform: "slack-test", Channel: "C1", Thread: "1700000500.000100"}
			prompt, err := a.AskPermission(context.Background(), to, platform.PermissionPrompt{RequestID: "req-1", Tool: "Bash", Text: "Permission?"})
			if err != nil {
				t.Fatal(err)
			}
			msg, ok := f.Message("C1", prompt.MessageID)
			if !ok {
				t.Fatalf("no prompt message %s", prompt.MessageID)
			}
			press := func() string {
				env := f.Press(t, msg, "cc_perm_allow", "U1")
				select {
				case <-h.got:
				case <-time.After(10 * time.Second):
					t.Fatal("the press did not reach the handler")
				}
				return env
			}

			env := press()
			if !tt.handledOnly {
				f.WaitAck(t, env) // while the handler still holds it
				h.result <- nil
				return
			}
			if f.Acked(env) {
				t.Fatalf("press %s acked before the handler took it", env)
			}
			h.result <- errors.New("the stream did not acknowledge the publish")
			logs.waitFor(t, "Handling Slack button failed")
			if f.Acked(env) {
				t.Errorf("press %s acked though the handler failed", env)
			}
			env = press()
			h.result <- nil
			f.WaitAck(t, env)
		})
	}
}
