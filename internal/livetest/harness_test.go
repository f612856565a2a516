package livetest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine"
	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/testenv"
	"github.com/cc-connect/cc-connect/internal/testlog"
	"github.com/cc-connect/cc-connect/platform"
)

// waitLimit bounds the waits on the chat: each waits on the real CLI,
// which needs seconds to start and per request on a loaded machine (the
// engine's real-CLI tests allow as long).
const waitLimit = 60 * time.Second

// setup is an engine serving one adapter, its claude the real CLI against
// a fake Messages API.
type setup struct {
	e    *engine.Engine
	api  *fakeapi.Server
	ws   string
	logs *testlog.Buffer
}

// options shapes the engine and the agent of a setup.
type options struct {
	progress string
	mode     string            // the agent's permission mode
	env      map[string]string // more of the agent's environment
	opts     func(*engine.Options)
}

// start runs an engine with adapter a bound to every channel for users U1
// and 7 (Slack's and Discord's ids), until the test ends.
func start(t testing.TB, a platform.Adapter, o options) *setup {
	t.Helper()
	bin := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	home := t.TempDir()
	ws := t.TempDir()
	env := map[string]string{
		"HOME":                home,
		"CLAUDE_CONFIG_DIR":   home + "/.claude",
		"ANTHROPIC_BASE_URL":  api.URL(),
		"ANTHROPIC_API_KEY":   "test",
		"DISABLE_TELEMETRY":   "1",
		"DISABLE_AUTOUPDATER": "1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
	}
	for k, v := range o.env {
		env[k] = v
	}
	no := false
	logs := &testlog.Buffer{}
	opts := engine.Options{
		Agent: agentproc.Config{Command: bin, CloseGrace: 10 * time.Second, Env: env, PermissionMode: o.mode},
		Bindings: []binding.Binding{{Platform: a.Name(), Channel: "*", Workspace: ws,
			AllowUsers: []string{"U1", "7", "42"}, RequireMention: &no, Progress: o.progress}},
		StateDir:          t.TempDir(),
		ShutdownGrace:     10 * time.Second,
		PermissionTimeout: time.Minute,
		Logger:            slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if o.opts != nil {
		o.opts(&opts)
	}
	e, err := engine.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.AddAdapter(a)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("engine.Run = %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Error("the engine did not stop")
		}
	})
	return &setup{e: e, api: api, ws: ws, logs: logs}
}
