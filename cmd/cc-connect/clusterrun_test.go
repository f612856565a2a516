package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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

// Three cc-connect binaries as one bot (docs/cluster.md): a 3-node
// JetStream cluster on 127.0.0.1, one fake Slack that spreads its
// envelopes over the three Socket Mode connections at random, and the
// fake claude. Host a owns the binding, b stands by, c only publishes
// what reaches it.

// clusterMember is one cc-connect binary of the cluster.
type clusterMember struct {
	name    string
	dir     string
	config  string
	record  string // what its fake claude was sent
	release string // [[SLOW]] turns end once this file exists
	env     []string
	p       *process
	runs    []*process // every start of this host, the current one last
}

const clusterBindingTOML = `
[[bindings]]
platform = "chat"
channel = "*"
workspace = "ws"
allow_users = ["U1"]
host = "a"
standby = ["b"]
progress = "quiet"
sender_header = false
`

// newClusterMember writes host name's config against the NATS urls.
func newClusterMember(t *testing.T, name string, urls []string, f *fakeslack.Server) *clusterMember {
	t.Helper()
	dir := t.TempDir()
	record, release := filepath.Join(dir, "record.jsonl"), filepath.Join(dir, "release")
	agent := fmt.Sprintf(`[agent]
command = %q
env = { CLAUDE_CONFIG_DIR = %q, FAKECLAUDE_RECORD = %q, FAKECLAUDE_RELEASE = %q }
shutdown_grace = "5s"
`, fakeclaude.Build(t), filepath.Join(dir, "claude-config"), record, release)
	return newClusterMemberWith(t, dir, name, urls, f, agent, replicas3, clusterBindingTOML)
}

const replicas3 = 3

// newClusterMemberWith writes host name's config in dir with its own
// [agent] table.
func newClusterMemberWith(t *testing.T, dir, name string, urls []string, f *fakeslack.Server, agent string, replicas int, binding string) *clusterMember {
	t.Helper()
	m := &clusterMember{name: name, dir: dir, record: filepath.Join(dir, "record.jsonl"), release: filepath.Join(dir, "release")}
	quoted := make([]string, len(urls))
	for i, u := range urls {
		quoted[i] = fmt.Sprintf("%q", u)
	}
	m.config = writeConfig(t, dir, fmt.Sprintf(`
[state]
dir = "state"
[log]
level = "debug"
%s
[cluster]
host = %q
members = ["a", "b", "c"]
urls = [%s]
lease_ttl = "3s"
replicas = %d
[[platforms]]
name = "chat"
type = "slack"
bot_token = "${SLACK_BOT_TOKEN}"
app_token = "${SLACK_APP_TOKEN}"
api_url = %q
`, agent, name, strings.Join(quoted, ", "), replicas, f.APIURL())+binding)
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	m.env = []string{"TMPDIR=" + tmp, "SLACK_BOT_TOKEN=" + fakeslack.BotToken, "SLACK_APP_TOKEN=" + fakeslack.AppToken}
	return m
}

// setLeaseTTL sets this host's cluster.lease_ttl. A test that moves the
// binding only by stopping or draining hosts (hand-overs) gives it a long
// TTL: no lease can then expire within the test, however starved a
// holder's renewals are on a busy machine.
func (m *clusterMember) setLeaseTTL(t *testing.T, ttl string) {
	t.Helper()
	data, err := os.ReadFile(m.config)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(data), `lease_ttl = "3s"`, fmt.Sprintf("lease_ttl = %q", ttl), 1)
	if err := os.WriteFile(m.config, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (m *clusterMember) start(t *testing.T) {
	t.Helper()
	m.p = startBinaryEnv(t, m.env, "run", "--config", m.config)
	m.runs = append(m.runs, m.p)
}

// logsAbout returns the log lines of every run of this host that contain
// one of subs, each prefixed with the host and the run's number.
func (m *clusterMember) logsAbout(subs ...string) []string {
	var out []string
	for i, p := range m.runs {
		for _, ln := range strings.Split(p.stderr.String(), "\n") {
			for _, s := range subs {
				if s != "" && strings.Contains(ln, s) {
					out = append(out, fmt.Sprintf("%s#%d %s", m.name, i+1, ln))
					break
				}
			}
		}
	}
	return out
}

// prompts are the texts this host's fake claude was sent.
func (m *clusterMember) prompts(t *testing.T) []string {
	t.Helper()
	if _, err := os.Stat(m.record); os.IsNotExist(err) {
		return nil
	}
	return fakeclaude.Texts(fakeclaude.ReadRecord(t, m.record))
}

func (m *clusterMember) ran(t *testing.T, text string) int {
	n := 0
	for _, p := range m.prompts(t) {
		if strings.Contains(p, text) {
			n++
		}
	}
	return n
}

func (m *clusterMember) setRelease(t *testing.T, on bool) {
	t.Helper()
	if on {
		if err := os.WriteFile(m.release, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := os.Remove(m.release); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
}

// echoes are the bot's replies in thread ts, in order: the fake claude's
// "echo: <prompt>", or a [[SLOW]] turn's "[chunk n]"s.
func echoes(f *fakeslack.Server, ts string) []string {
	var out []string
	for _, m := range f.Posts() {
		if m.ThreadTS == ts && m.BotID != "" && (strings.Contains(m.Text, "echo:") || strings.Contains(m.Text, "[chunk ")) {
			out = append(out, m.Text)
		}
	}
	return out
}

// waitEchoes waits for n replies in thread ts and checks that they answer
// want, in order, once each.
func waitEchoes(t *testing.T, f *fakeslack.Server, ts string, want []string) {
	t.Helper()
	f.Wait(t, fmt.Sprintf("%d replies in thread %s", len(want), ts), func() bool { return len(echoes(f, ts)) >= len(want) })
	got := echoes(f, ts)
	if len(got) != len(want) {
		t.Fatalf("thread %s: %d replies, want %d: %q", ts, len(got), len(want), got)
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Fatalf("thread %s: reply %d = %q, want the answer to %q (in order, once each): all %q", ts, i, got[i], w, got)
		}
	}
}

// A starved renewal is a hand-over too. The binary's leases are real
// (lease_ttl 3s here, so that a kill fails over in seconds; it takes no
// test clock): a holder starved of CPU for most of a TTL on a busy machine
// stops trusting its lease, and the standby takes the binding, as it
// would after a kill. What a person sees must hold across such a hand-over
// (every message answered once, in its thread's order); which host ran a
// turn depends on who held the binding, which the tests read from the
// hosts' logs: a tenure's start is logged once, with its token.

// tenureStart finds the start of a tenure of the binding in a log line.
var tenureStart = regexp.MustCompile(`msg="Serving the binding".* token=(\d+)`)

// latestTenure is the highest token of the tenures this host's current
// run began (0: none, as far as its log was read).
func (m *clusterMember) latestTenure() uint64 { return m.p.latestTenure() }

// latestTenure is the highest token of the tenures this run began.
func (p *process) latestTenure() uint64 {
	var latest uint64
	for _, sub := range tenureStart.FindAllStringSubmatch(p.stderr.String(), -1) {
		if n, err := strconv.ParseUint(sub[1], 10, 64); err == nil && n > latest {
			latest = n
		}
	}
	return latest
}

// movesOf bounds how often the binding moved between the runs ps: the
// tenures they began beyond the first (a host taking back its own lapsed
// lease counts too). A test's kill is one; a starved renewal adds more.
func movesOf(ps ...*process) int {
	n := 0
	for _, p := range ps {
		n += len(tenureStart.FindAllString(p.stderr.String(), -1))
	}
	return max(0, n-1)
}

// tenures counts the tenures this host's current run began so far.
func (m *clusterMember) tenures() int { return len(tenureStart.FindAllString(m.p.stderr.String(), -1)) }

// holder is the live host whose current run began the binding's latest
// tenure, or nil.
func holder(hosts ...*clusterMember) *clusterMember {
	var h *clusterMember
	var latest uint64
	for _, m := range hosts {
		select {
		case <-m.p.exited:
			continue
		default:
		}
		if n := m.latestTenure(); n > latest {
			h, latest = m, n
		}
	}
	return h
}

// ranOnlyServing checks that host m ran turns only while serving the
// binding: a host the test did not give the binding may have run some
// only if a starved renewal handed it over, so it must have logged a
// tenure, and prev, the holder before it, the loss of its own (in any of
// its runs; both waited for, since a log is read behind the turns): a host
// that served beside the holder fails here.
func (m *clusterMember) ranOnlyServing(t *testing.T, turns int, what string, prev *clusterMember) {
	t.Helper()
	if turns == 0 {
		return
	}
	t.Logf("host %s ran %d turns of %s: the binding moved to it (a starved renewal)", m.name, turns, what)
	m.p.waitErr(t, "Serving the binding")
	const lost = "Stopped serving the binding: its lease was lost"
	if len(prev.logsAbout(lost)) == 0 { // in none of prev's runs yet
		prev.p.waitErr(t, lost)
	}
}

// makeHolder gives the binding back to want if a starved renewal moved it
// to another of hosts: that holder is stopped (SIGTERM hands the binding
// over; want, the owner or the first standby, takes it at once) and
// started again, as a process of top (the test the hosts belong to, not
// the subtest: a process ends with the test that started it), so that a
// subtest starts from the holder it is about.
func makeHolder(t, top *testing.T, want *clusterMember, hosts ...*clusterMember) {
	t.Helper()
	h := holder(hosts...)
	if h == nil || h == want {
		return
	}
	t.Logf("host %s holds the binding (a starved renewal moved it): handing it back to %s", h.name, want.name)
	n := want.tenures()
	h.stop(t)
	want.p.waitErrCount(t, "Serving the binding", n+1)
	h.start(top)
	h.p.waitErr(t, "Joined the cluster")
}

// slowTurnOn starts a [[SLOW]] turn, text, on want in a new thread: the
// set-up of a subtest about what befalls a holder mid-turn. makeHolder
// gives want the binding and a mention starts the turn; but a starved
// renewal in the gap between the two can move the binding again, and the
// turn then runs on another host (where [[SLOW]] may end at once), or on
// want and then again on the next holder. The set-up is then made anew,
// in a new thread and with a text of its own, until the turn runs on
// want alone while the hosts' logs show want holding. It returns the
// thread and the text the turn was sent with; root is the first try's
// thread, a later try's is root's second plus 1000 per try.
func slowTurnOn(t, top *testing.T, want *clusterMember, f *fakeslack.Server, root, text string, hosts ...*clusterMember) (ts, sent string) {
	t.Helper()
	sec, err := strconv.ParseInt(strings.TrimSuffix(root, ".000100"), 10, 64)
	if err != nil || !strings.HasSuffix(root, ".000100") {
		t.Fatalf("root %q is not <seconds>.000100", root)
	}
	const tries = 5
	for try := range tries {
		ts, sent = fmt.Sprintf("%d.000100", sec+1000*int64(try)), text
		if try > 0 {
			sent = fmt.Sprintf("%s (set-up #%d)", text, try+1)
		}
		makeHolder(t, top, want, hosts...)
		f.DeliverMention(t, fakeslack.MsgEvent("C1", ts, "U1", "<@UBOT> [[SLOW]] "+sent, nil))
		elsewhere := func() *clusterMember {
			for _, h := range hosts {
				if h != want && h.ran(t, sent) > 0 {
					return h
				}
			}
			return nil
		}
		waitFile(t, "the turn running on a host", func() bool { return want.ran(t, sent) > 0 || elsewhere() != nil })
		if h := elsewhere(); h != nil {
			t.Logf("set-up #%d: the turn ran on %s, not %s (a starved renewal moved the binding): again, in a new thread", try+1, h.name, want.name)
			continue
		}
		if h := holder(hosts...); h != want {
			name := "no live host"
			if h != nil {
				name = h.name
			}
			t.Logf("set-up #%d: %s ran the turn but the logs show %s holding the binding: again, in a new thread", try+1, want.name, name)
			continue
		}
		return ts, sent
	}
	t.Fatalf("in %d set-ups the binding did not stay with %s long enough to start a turn there", tries, want.name)
	return "", ""
}

func TestClusterOfThreeBinaries(t *testing.T) {
	t.Parallel()
	nc := clustertest.StartCluster(t, 3)
	urls := nc.URLs()
	f := fakeslack.New(t)
	f.SetSpread(18)
	// Slack waits 3 s for an ack; a host cut off from NATS acks nothing,
	// and Slack sends the envelope again, to any connection.
	f.SetRedeliverAfter(3 * time.Second)
	f.SetRetries(5)

	// a reaches NATS through proxies it can be cut off by.
	var proxies []*clustertest.Proxy
	var aURLs []string
	for _, u := range urls {
		p := clustertest.NewProxy(t, strings.TrimPrefix(u, "nats://"))
		proxies = append(proxies, p)
		aURLs = append(aURLs, p.URL())
	}
	a := newClusterMember(t, "a", aURLs, f)
	b := newClusterMember(t, "b", urls, f)
	c := newClusterMember(t, "c", urls, f)
	hosts := []*clusterMember{a, b, c}
	b.setRelease(t, true) // [[SLOW]] turns hang on a, and end at once on b
	// The owner first: a standby that finds the lease free long enough
	// takes it, and these subtests start with a as the holder.
	a.start(t)
	a.p.waitErr(t, "Serving the binding")
	b.start(t)
	c.start(t)
	f.WaitConn(t, 3)

	top := t // the hosts' processes are the whole test's
	const root1, root2 = "1700000001.000100", "1700000002.000100"
	t.Run("every message is answered once, in order, by the owner", func(t *testing.T) {
		var want1, want2 []string
		// Slack keeps no order across connections: each message waits for
		// the ack of the one before it in its thread, as typing does.
		deliver := func(ev map[string]any) { f.WaitAck(t, f.Deliver(t, ev)) }
		mention := func(ev map[string]any) {
			x, y := f.DeliverMention(t, ev)
			f.WaitAck(t, x)
			f.WaitAck(t, y)
		}
		mention(fakeslack.MsgEvent("C1", root1, "U1", "<@UBOT> first thread", nil))
		mention(fakeslack.MsgEvent("C1", root2, "U1", "<@UBOT> second thread", nil))
		want1, want2 = append(want1, "first thread"), append(want2, "second thread")
		for i := range 5 {
			text := fmt.Sprintf("reply %d in one", i)
			deliver(fakeslack.MsgEvent("C1", fmt.Sprintf("1700000001.%06d", 1000*(i+1)), "U1", text, map[string]any{"thread_ts": root1}))
			want1 = append(want1, text)
			if i%2 == 0 {
				text := fmt.Sprintf("reply %d in two", i)
				deliver(fakeslack.MsgEvent("C1", fmt.Sprintf("1700000002.%06d", 1000*(i+1)), "U1", text, map[string]any{"thread_ts": root2}))
				want2 = append(want2, text)
			}
		}
		waitEchoes(t, f, root1, want1)
		waitEchoes(t, f, root2, want2)
		if n := c.ran(t, "thread"); n != 0 {
			t.Errorf("c, which neither owns the binding nor stands by, ran %d turns", n)
		}
		b.ranOnlyServing(t, b.ran(t, "thread"), "the threads", a)
		// The envelopes were spread: every host received some and
		// published them.
		for _, h := range hosts {
			if !strings.Contains(h.p.stderr.String(), "Slack message received") {
				t.Errorf("host %s received no envelope: the fake did not spread them", h.name)
			}
		}
	})

	t.Run("a redelivery to another host runs once", func(t *testing.T) {
		const ts = "1700000003.000100"
		ev := fakeslack.MsgEvent("C1", ts, "U1", "<@UBOT> said once", nil)
		id := f.Deliver(t, ev)
		f.WaitAck(t, id)
		// Slack's retries of the same event, to whichever connection.
		for i := range 4 {
			f.DeliverEnvelope(t, fakeslack.EventEnvelope(fmt.Sprintf("env-again-%d", i), "EvAgain", i+1, ev))
			f.WaitAck(t, fmt.Sprintf("env-again-%d", i))
		}
		waitEchoes(t, f, ts, []string{"said once"})
		const later = "1700000003.000200"
		f.Deliver(t, fakeslack.MsgEvent("C1", later, "U1", "later", map[string]any{"thread_ts": ts}))
		waitEchoes(t, f, ts, []string{"said once", "later"})
		// Once on the owner; or, if the binding moved meanwhile, at most
		// once on each host that served it.
		for _, h := range hosts {
			n := h.ran(t, "said once")
			if n > 1 {
				t.Errorf("host %s ran the redelivered message %d times", h.name, n)
			}
			if h != a {
				h.ranOnlyServing(t, n, "the redelivered message", a)
			}
		}
	})

	t.Run("an owner cut off from NATS mid-turn answers nothing; the standby finishes", func(t *testing.T) {
		ts, cutOff := slowTurnOn(t, top, a, f, "1700000004.000100", "cut off", hosts...)
		reply := func(n int) string { return fmt.Sprintf("%s.000%d00", strings.TrimSuffix(ts, ".000100"), n) }
		for _, p := range proxies {
			p.Cut()
			defer p.Heal()
		}
		f.Deliver(t, fakeslack.MsgEvent("C1", reply(2), "U1", "after the cut", map[string]any{"thread_ts": ts}))
		waitEchoes(t, f, ts, []string{"[chunk ", "after the cut"})
		f.WaitPost(t, "the moved notice", func(m fakeslack.Message) bool {
			return m.ThreadTS == ts && strings.Contains(m.Text, "moved to host b")
		})
		if n := b.ran(t, cutOff); n != 1 {
			t.Errorf("the standby ran the cut turn %d times", n)
		}
		served := a.tenures()
		for _, p := range proxies {
			p.Heal()
		}
		// Healed, a does not take the binding back (unless b, starved,
		// let its lease lapse: then a served again, in a new tenure).
		f.Deliver(t, fakeslack.MsgEvent("C1", reply(3), "U1", "healed", map[string]any{"thread_ts": ts}))
		waitEchoes(t, f, ts, []string{"[chunk ", "after the cut", "healed"})
		back := false
		if n := a.ran(t, "healed") + a.ran(t, "after the cut"); n != 0 {
			t.Logf("the healed owner ran %d turns of the thread: b must have lost the binding to it", n)
			a.p.waitErrCount(t, "Serving the binding", served+1)
			back = true
		}
		if n := len(f.Posts()); n == 0 {
			t.Fatal("no posts")
		}
		for _, m := range f.Posts() {
			if m.ThreadTS == ts && strings.Contains(m.Text, "moved to host") && !strings.Contains(m.Text, "host b") &&
				(!back || !strings.Contains(m.Text, "host a")) {
				t.Errorf("a moved notice names the wrong host: %q", m.Text)
			}
		}
	})

	t.Run("kill -9 of the holder mid-turn: the owner takes it back and finishes", func(t *testing.T) {
		a.setRelease(t, true)
		b.setRelease(t, false)
		ts, killed := slowTurnOn(t, top, b, f, "1700000005.000100", "killed", hosts...)
		if err := b.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-b.p.exited
		f.Deliver(t, fakeslack.MsgEvent("C1", strings.TrimSuffix(ts, ".000100")+".000200", "U1", "after the kill", map[string]any{"thread_ts": ts}))
		waitEchoes(t, f, ts, []string{"[chunk ", "after the kill"})
		if n := a.ran(t, killed); n != 1 {
			t.Errorf("the owner ran the killed turn %d times", n)
		}
	})
}

// TestRealCLICluster: the real CLI behind the cluster path. Two hosts
// on one NATS node (a owns the binding, c only publishes what reaches it);
// Slack spreads the mention's two copies over both connections; the reply
// lands once, in the mention's thread, with what the fake Messages API
// answered the real claude.
func TestRealCLICluster(t *testing.T) {
	t.Parallel()
	claude := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	srv := clustertest.Single(t)
	f := fakeslack.New(t)
	f.SetSpread(7)
	var hosts []*clusterMember
	for _, name := range []string{"a", "c"} {
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
		m := newClusterMemberWith(t, dir, name, []string{srv.ClientURL()}, f, agent, 1, clusterBindingTOML)
		m.env = append(m.env, "CC_CONNECT_TEST_API_URL="+api.URL())
		m.start(t)
		if name == "a" {
			m.p.waitErr(t, "Serving the binding")
		}
		hosts = append(hosts, m)
	}
	f.WaitConn(t, 2)

	const ts = "1700000009.000100"
	f.DeliverMention(t, fakeslack.MsgEvent("C1", ts, "U1", "<@UBOT> hello from the cluster", nil))
	reply := f.WaitPost(t, "the real claude's reply in the thread", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "echo: ")
	})
	if !strings.Contains(reply.Text, "hello from the cluster") || reply.Channel != "C1" {
		t.Fatalf("reply %+v does not answer the mention", reply)
	}
	if !strings.Contains(string(lastRequest(t, api).Body), "hello from the cluster") {
		t.Errorf("the fake API never saw the message")
	}
	hosts[0].p.waitErr(t, "context_usage")
	if n := len(echoes(f, ts)); n != 1 {
		t.Errorf("%d replies in the thread, want 1", n)
	}
	for _, h := range hosts {
		if s := h.p.stderr.String(); strings.Contains(s, "sk-cc-connect-test-key") {
			t.Errorf("host %s logged the API key", h.name)
		}
	}
}
