package agentproc_test

import (
	"slices"
	"testing"

	"github.com/cc-connect/cc-connect/agentproc"
)

// A ReadOnly fork of a session started in bypassPermissions, with agent
// args that ask for every tool, reports only the read-only tools and plan
// mode in its init: the CLI applies the flags BuildArgs puts last. (The
// engine's TestRealCLIBtwCannotWrite shows that the writes are refused.)
func TestRealCLIReadOnlyFork(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.cfg.PermissionMode = "bypassPermissions"
	r.cfg.Env["IS_SANDBOX"] = "1" // the CLI refuses bypassPermissions to root without it
	r.cfg.Args = []string{"--tools", "default", "--allowedTools", "Bash,Write"}
	p := r.start(t, agentproc.StartOptions{})
	mustTurn(t, p, "hello", "echo: hello")
	id := p.SessionID()
	closeProc(t, p)

	fork := r.start(t, agentproc.StartOptions{ResumeID: id, Fork: true, ReadOnly: true})
	_, evs := mustTurn(t, fork, "side", "echo: side")
	var init *agentproc.Init
	for _, e := range evs {
		if e, ok := e.(agentproc.Init); ok {
			init = &e
		}
	}
	want := slices.Sorted(slices.Values(agentproc.ReadOnlyTools))
	if init == nil || !slices.Equal(slices.Sorted(slices.Values(init.Tools)), want) || init.PermissionMode != "plan" {
		t.Errorf("fork init = %+v, want tools %q in plan mode (driver/CLI mismatch on --tools or --permission-mode)", init, want)
	}
}
