package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/cluster/clustertest"
	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// TestClusterFailoverKeepsContext: two turns in a thread on the owner,
// the owner killed, and the standby's next turn resumes the same Claude
// session (the fake claude resumes a session only from its transcript on
// this host's disk, which only the replicated copy can have put there),
// tells the thread once, and status says the context is replicated.
func TestClusterFailoverKeepsContext(t *testing.T) {
	t.Parallel()
	nc := clustertest.StartCluster(t, 3)
	f := fakeslack.New(t)
	f.SetSpread(35)
	f.SetRedeliverAfter(3 * time.Second)
	f.SetRetries(5)
	f.SetWaitLimit(time.Minute)
	// One workspace path for the owner and its standby, as on hosts that
	// share the checkout's path; each host has its own Claude config.
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	bindingTOML := strings.Replace(clusterBindingTOML, `workspace = "ws"`, fmt.Sprintf("workspace = %q", ws), 1)
	member := func(name string) *clusterMember {
		dir := t.TempDir()
		agent := fmt.Sprintf(`[agent]
command = %q
env = { CLAUDE_CONFIG_DIR = %q, FAKECLAUDE_RECORD = %q, FAKECLAUDE_RELEASE = %q }
shutdown_grace = "5s"
`, fakeclaude.Build(t), filepath.Join(dir, "claude-config"), filepath.Join(dir, "record.jsonl"), filepath.Join(dir, "release"))
		return newClusterMemberWith(t, dir, name, nc.URLs(), f, agent, replicas3, bindingTOML)
	}
	a, b, c := member("a"), member("b"), member("c")
	a.start(t)
	a.p.waitErr(t, "Serving the binding")
	b.start(t)
	c.start(t)
	f.WaitConn(t, 3)

	x, y := f.DeliverMention(t, fakeslack.MsgEvent("C1", root, "U1", "<@UBOT> the root", nil))
	f.WaitEventAck(t, x)
	f.WaitEventAck(t, y)
	waitEchoes(t, f, root, []string{"the root"})
	f.WaitEventAck(t, f.Deliver(t, fakeslack.MsgEvent("C1", "1700000020.000100", "U1", "first reply", map[string]any{"thread_ts": root})))
	waitEchoes(t, f, root, []string{"the root", "first reply"})
	// Replicated after each reply is posted: both copies written before
	// the kill (by a, or by b too if a starved renewal moved the thread
	// there: see tenureStart).
	f.Wait(t, "the holders replicated both turns", func() bool {
		return strings.Count(a.p.stderr.String()+b.p.stderr.String(), "Replicated the conversation's context") >= 2
	})
	owned := fakeclaude.ReadRecord(t, a.record)
	before := fakeclaude.ReadRecord(t, b.record)
	b.ranOnlyServing(t, len(before), "the thread before the kill", a)
	if len(owned) == 0 || len(owned)+len(before) < 2 {
		t.Fatalf("the turns before the kill: %+v on the owner, %+v on the standby; want both, the first on the owner", owned, before)
	}
	sid := owned[0].SessionID
	for _, r := range append(owned, before...) {
		if sid == "" || r.SessionID != sid {
			t.Fatalf("the turns before the kill: %+v on the owner, %+v on the standby; want one session", owned, before)
		}
	}

	if err := a.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.p.exited
	killed := time.Now()
	f.WaitEventAck(t, f.Deliver(t, fakeslack.MsgEvent("C1", "1700000030.000100", "U1", "second reply", map[string]any{"thread_ts": root})))
	waitEchoes(t, f, root, []string{"the root", "first reply", "second reply"})
	t.Logf("from the kill to the standby's reply in the same session: %s (lease_ttl 3s)", time.Since(killed).Round(time.Millisecond))

	took := fakeclaude.ReadRecord(t, b.record)[len(before):]
	if len(took) != 1 || took[0].SessionID != sid || took[0].Text != "second reply" {
		t.Fatalf("the standby's turns after the kill: %+v; want \"second reply\" alone, in session %s (resumed, so without the thread as context)", took, sid)
	}
	notices := 0
	for _, p := range f.Posts() {
		if p.ThreadTS == root && strings.Contains(p.Text, "It continues in the same Claude session, with the conversation's history.") {
			notices++
		}
		if p.ThreadTS == root && strings.Contains(p.Text, "new Claude session") {
			t.Errorf("the thread was told of a new session: %q", p.Text)
		}
	}
	// Once for the kill's move; once more for each move a starved
	// renewal made (tenures beyond a's first and b's after the kill).
	moves := 1 + max(0, a.tenures()+b.tenures()-2)
	if notices < 1 || notices > moves {
		t.Errorf("the thread was told %d times that it continues with its history; want once per move (%d)", notices, moves)
	}
	cmd := exec.Command(buildBinary(t), "--config", c.config, "cluster", "status")
	cmd.Env = append(os.Environ(), c.env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cluster status: %v", err)
	}
	if !strings.Contains(string(out), "context replicated: yes") {
		t.Errorf("cluster status does not show the thread's context replicated:\n%s", out)
	}
}

// TestRealCLIClusterFailoverKeepsContext: the real CLI behind a failover
// on a 3-node JetStream. Two turns on the owner; the owner killed; the
// standby's turn reaches the Messages API with the earlier turns, Claude's
// answers included: the real claude resumed the owner's session from the
// replicated transcript.
func TestRealCLIClusterFailoverKeepsContext(t *testing.T) {
	t.Parallel()
	claude := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	nc := clustertest.StartCluster(t, 3)
	f := fakeslack.New(t)
	f.SetSpread(35)
	f.SetRedeliverAfter(3 * time.Second)
	f.SetRetries(5)
	f.SetWaitLimit(time.Minute)
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	bindingTOML := strings.Replace(clusterBindingTOML, `workspace = "ws"`, fmt.Sprintf("workspace = %q", ws), 1)
	member := func(name string) *clusterMember {
		dir := t.TempDir()
		home := filepath.Join(dir, "home")
		if err := os.Mkdir(home, 0o755); err != nil {
			t.Fatal(err)
		}
		agent := fmt.Sprintf(`[agent]
command = %q
idle_timeout = "5m"
[agent.env]
HOME = %q
CLAUDE_CONFIG_DIR = %q
ANTHROPIC_BASE_URL = "${CC_CONNECT_TEST_API_URL}"
ANTHROPIC_API_KEY = "sk-cc-connect-test-key"
DISABLE_TELEMETRY = "1"
CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1"
DISABLE_AUTOUPDATER = "1"
`, claude, home, filepath.Join(home, ".claude"))
		m := newClusterMemberWith(t, dir, name, nc.URLs(), f, agent, replicas3, bindingTOML)
		m.env = append(m.env, "CC_CONNECT_TEST_API_URL="+api.URL())
		return m
	}
	a, b, c := member("a"), member("b"), member("c")
	a.start(t)
	a.p.waitErr(t, "Serving the binding")
	b.start(t)
	c.start(t)
	f.WaitConn(t, 3)

	x, y := f.DeliverMention(t, fakeslack.MsgEvent("C1", root, "U1", "<@UBOT> the root", nil))
	f.WaitEventAck(t, x)
	f.WaitEventAck(t, y)
	waitEchoes(t, f, root, []string{"the root"})
	f.WaitEventAck(t, f.Deliver(t, fakeslack.MsgEvent("C1", "1700000020.000100", "U1", "first reply", map[string]any{"thread_ts": root})))
	waitEchoes(t, f, root, []string{"the root", "first reply"})
	f.Wait(t, "the holders replicated both turns", func() bool {
		return strings.Count(a.p.stderr.String()+b.p.stderr.String(), "Replicated the conversation's context") >= 2
	})
	if err := a.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.p.exited
	f.WaitEventAck(t, f.Deliver(t, fakeslack.MsgEvent("C1", "1700000030.000100", "U1", "second reply", map[string]any{"thread_ts": root})))
	waitEchoes(t, f, root, []string{"the root", "first reply", "second reply"})

	var req struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	last := lastRequest(t, api)
	if err := json.Unmarshal(last.Body, &req); err != nil {
		t.Fatal(err)
	}
	answers := 0
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			answers++
		}
	}
	body := string(last.Body)
	if answers < 2 || !strings.Contains(body, "the root") || !strings.Contains(body, "first reply") || !strings.Contains(body, "second reply") {
		t.Errorf("the standby's request holds %d of Claude's answers (want the 2 earlier ones) and the earlier turns: %.2000s", answers, body)
	}
	b.p.waitErr(t, "Took over the conversation with its replicated context")
}
