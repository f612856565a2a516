package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/cluster/clustertest"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
)

// TestClusterLeaseMovesInTheAuditTrail: two binaries on a JetStream server,
// a owning the binding and b standing by, each with its audit trail (on by
// default). a takes the lease; stopped (SIGTERM), it hands the binding over
// and b takes it at once. `cc-connect audit --kind lease` of each host
// prints those moves: a's "taken" then "released", b's "taken", each with
// its host and the binding.
func TestClusterLeaseMovesInTheAuditTrail(t *testing.T) {
	t.Parallel()
	srv := clustertest.Single(t)
	f := fakeslack.New(t)
	member := func(name string) *clusterMember {
		dir := t.TempDir()
		agent := fmt.Sprintf(`[agent]
command = %q
env = { CLAUDE_CONFIG_DIR = %q, FAKECLAUDE_RECORD = %q }
`, fakeclaude.Build(t), filepath.Join(dir, "claude-config"), filepath.Join(dir, "record.jsonl"))
		m := newClusterMemberWith(t, dir, name, []string{srv.ClientURL()}, f, agent, 1, clusterBindingTOML)
		m.setLeaseTTL(t, "30s") // only the stops move the lease: a starved renewal cannot add a move
		return m
	}
	a, b := member("a"), member("b")
	a.start(t)
	a.p.waitErr(t, "Serving a cluster binding")
	b.start(t)
	f.WaitConn(t, 2)
	a.stop(t)                                   // a hand-over: b need not wait for the lease to expire
	b.p.waitErr(t, "Serving a cluster binding") // its tenure started, "taken" recorded
	b.stop(t)

	audit := func(m *clusterMember) []string {
		t.Helper()
		cmd := exec.Command(buildBinary(t), "audit", "--config", m.config, "--kind", "lease")
		cmd.Env = append(os.Environ(), m.env...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("cc-connect audit of %s: %v\n%s", m.name, err, errOut.String())
		}
		return strings.Split(strings.TrimSpace(out.String()), "\n")
	}
	// One line each: "<time>  lease      chat/*: host a taken".
	check := func(m *clusterMember, want ...string) {
		t.Helper()
		lines := audit(m)
		if len(lines) != len(want) {
			t.Fatalf("cc-connect audit --kind lease of %s printed %d lines, want %d (%q):\n%s",
				m.name, len(lines), len(want), want, strings.Join(lines, "\n"))
		}
		for i, l := range lines {
			if f := strings.Fields(l); len(f) < 2 || f[1] != "lease" || !strings.Contains(l, "chat/*") ||
				!strings.HasSuffix(l, "host "+m.name+" "+want[i]) {
				t.Errorf("%s's lease line %d = %q, want the binding chat/*, host %s, %s", m.name, i+1, l, m.name, want[i])
			}
		}
	}
	check(a, "taken", "released")
	check(b, "taken", "released")
}
