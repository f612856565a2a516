package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentcfg"
	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// BenchmarkEndToEnd times one chat turn through the whole of cc-connect
// (`cc-connect run`'s code, in this process) from the moment a line is
// written to the local platform's input until the reply is written to its
// output. Each op runs these back to back, so that they share the
// machine's load, in an order that alternates from op to op, so that
// neither side always follows the other:
//
//   - warm: a session whose claude process is live;
//   - direct-warm: the same turn sent straight to a live claude by a
//     minimal driver (write the user line, read stdout to the result
//     line), with the same arguments and environment and no cc-connect;
//   - cold: a session whose process was reaped (idle_timeout), so the turn
//     spawns `claude --resume`;
//   - direct-cold: the minimal driver spawning `claude --resume` itself.
//
// cli=real runs the real claude CLI against the fake Messages API; it skips
// without the CLI outside CI (internal/testenv). cli=fake runs the fake
// claude binary, whose turns take about a millisecond: the CLI's own
// variance (tens of ms) then no longer hides cc-connect's added latency.
//
// Metrics are medians over the ops, in ms: warm-p50-ms, direct-warm-p50-ms,
// cold-p50-ms, direct-cold-p50-ms, added-p50-ms (the median of the paired
// differences warm minus direct-warm: cc-connect's added latency),
// cold-added-p50-ms (the same for cold), and warm-gain-x (cold-p50 over
// warm-p50). agent-rss-MB is the resident memory of the direct driver's
// live agent after its turns: what a warm process holds and reaping frees.
func BenchmarkEndToEnd(b *testing.B) {
	b.Run("cli=real", func(b *testing.B) {
		claude := testenv.ClaudeBinary(b)
		api := fakeapi.Start(b)
		benchEndToEnd(b, claude, api.URL())
	})
	b.Run("cli=fake", func(b *testing.B) {
		benchEndToEnd(b, fakeclaude.Build(b), "http://127.0.0.1:9/unused")
	})
}

func benchEndToEnd(b *testing.B, claude, apiURL string) {
	dir := b.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		b.Fatal(err)
	}
	warm := startRunInProcess(b, claude, apiURL, home, filepath.Join(dir, "warm"), "1h")
	// A 1 ms idle timeout reaps the process right after each turn.
	cold := startRunInProcess(b, claude, apiURL, home, filepath.Join(dir, "cold"), "1ms")
	direct := newDirectDriver(b, warm.configPath, filepath.Join(dir, "direct"))

	// Every path starts its session once before the timed turns.
	warm.turn(b, "warm start")
	cold.turn(b, "cold start")
	cold.waitExits(b, 1)
	directWarm := direct.start(b, "")
	directWarm.turn(b, "direct start")
	_, coldID := direct.oneShot(b, "", "direct cold start")

	var warmD, directWarmD, coldD, directColdD, added, coldAdded []time.Duration
	i := 0
	for b.Loop() {
		i++
		var w, dw, c, dc time.Duration
		ccWarm := func() { w = warm.turn(b, fmt.Sprintf("warm %d", i)) }
		directWarmTurn := func() { dw = directWarm.turn(b, fmt.Sprintf("direct warm %d", i)) }
		ccCold := func() {
			c = cold.turn(b, fmt.Sprintf("cold %d", i))
			cold.waitExits(b, i+1)
		}
		directCold := func() { dc, _ = direct.oneShot(b, coldID, fmt.Sprintf("direct cold %d", i)) }
		// Alternate which goes first: a CLI still busy after its turn
		// (writing its transcript) slows whatever runs next.
		if i%2 == 1 {
			ccWarm()
			directWarmTurn()
			ccCold()
			directCold()
		} else {
			directWarmTurn()
			ccWarm()
			directCold()
			ccCold()
		}
		warmD, directWarmD, coldD, directColdD = append(warmD, w), append(directWarmD, dw), append(coldD, c), append(directColdD, dc)
		added, coldAdded = append(added, w-dw), append(coldAdded, c-dc)
	}
	b.ReportMetric(p50ms(warmD), "warm-p50-ms")
	b.ReportMetric(p50ms(directWarmD), "direct-warm-p50-ms")
	b.ReportMetric(p50ms(coldD), "cold-p50-ms")
	b.ReportMetric(p50ms(directColdD), "direct-cold-p50-ms")
	b.ReportMetric(p50ms(added), "added-p50-ms")
	b.ReportMetric(p50ms(coldAdded), "cold-added-p50-ms")
	if w := p50ms(warmD); w > 0 {
		b.ReportMetric(p50ms(coldD)/w, "warm-gain-x")
	}
	// What keeping a process warm holds, and reaping it frees.
	if rss := processRSS(directWarm.cmd.Process.Pid); rss > 0 {
		b.ReportMetric(float64(rss)/(1<<20), "agent-rss-MB")
	}
}

// processRSS is the resident set of process pid in bytes (VmRSS from
// /proc); 0 where it cannot be read.
func processRSS(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), &kb); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// p50ms is the median of ds in milliseconds (the upper one of an even count).
func p50ms(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}

// inProcessRun is `cc-connect run` running in this process on the local
// platform, with its input and output held by the benchmark.
type inProcessRun struct {
	configPath string
	in         *io.PipeWriter
	out        *lineWatch // the chat output
	log        *lineWatch // the log (stderr)
}

// startRunInProcess writes a config for dir (state, workspace) and starts
// runCommand on it. The agent is the real CLI against apiURL. It keeps no
// spare process (prewarm = 0): the turns here resume a session, which a
// spare cannot serve, and under a 1 ms idle timeout the cold run would
// start and close one around every turn, on the CPU the timed turns
// share (BenchmarkSlackThreads measures spares).
func startRunInProcess(tb testing.TB, claude, apiURL, home, dir, idleTimeout string) *inProcessRun {
	tb.Helper()
	path := writeConfig(tb, dir, fmt.Sprintf(`
[state]
dir = "state"
[log]
level = "info"
[agent]
command = %q
idle_timeout = %q
prewarm = 0
self_report = false
[agent.env]
HOME = %q
CLAUDE_CONFIG_DIR = %q
ANTHROPIC_BASE_URL = %q
ANTHROPIC_API_KEY = "sk-cc-connect-bench"
DISABLE_TELEMETRY = "1"
DISABLE_AUTOUPDATER = "1"
CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1"
`, claude, idleTimeout, home, filepath.Join(home, ".claude"), apiURL)+localChatTOML)
	inR, inW := io.Pipe()
	r := &inProcessRun{configPath: path, in: inW, out: newLineWatch(), log: newLineWatch()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- runCommand(ctx, path, stdio{In: inR, Out: r.out, Err: r.log}, runFlags{}) }()
	tb.Cleanup(func() {
		cancel()
		_ = inW.Close()
		select {
		case code := <-done:
			if code != exitOK {
				tb.Errorf("cc-connect run exited %d; log:\n%s", code, r.log.String())
			}
		case <-time.After(2 * time.Minute):
			tb.Errorf("cc-connect run did not stop; log:\n%s", r.log.String())
		}
	})
	return r
}

// turn types text into the local chat and returns how long the reply took
// to come out.
func (r *inProcessRun) turn(tb testing.TB, text string) time.Duration {
	tb.Helper()
	want := "echo: " + text
	from := r.out.count()
	t0 := time.Now()
	if _, err := io.WriteString(r.in, text+"\n"); err != nil {
		tb.Fatal(err)
	}
	at, ok := r.out.waitFor(from, want, 2*time.Minute)
	if !ok {
		tb.Fatalf("no reply %q; output:\n%s\nlog:\n%s", want, r.out.String(), r.log.String())
	}
	return at.Sub(t0)
}

// waitExits waits until the log has reported n agent processes exiting.
func (r *inProcessRun) waitExits(tb testing.TB, n int) {
	tb.Helper()
	if !r.log.waitCount("Agent process exited", n, 2*time.Minute) {
		tb.Fatalf("fewer than %d agent exits logged:\n%s", n, r.log.String())
	}
}

// lineWatch is a writer that keeps what was written, with the time of each
// write, and lets a reader wait for a write containing some text.
type lineWatch struct {
	mu      sync.Mutex // guards the fields below
	writes  []timedWrite
	changed chan struct{}
}

type timedWrite struct {
	at   time.Time
	text string
}

func newLineWatch() *lineWatch { return &lineWatch{changed: make(chan struct{})} }

func (w *lineWatch) Write(p []byte) (int, error) {
	at := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, timedWrite{at: at, text: string(p)})
	close(w.changed)
	w.changed = make(chan struct{})
	return len(p), nil
}

func (w *lineWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.writes)
}

func (w *lineWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var sb strings.Builder
	for _, wr := range w.writes {
		sb.WriteString(wr.text)
	}
	return sb.String()
}

// waitFor returns the time of the first write from index from on that
// contains sub.
func (w *lineWatch) waitFor(from int, sub string, limit time.Duration) (time.Time, bool) {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		for _, wr := range w.writes[from:] {
			if strings.Contains(wr.text, sub) {
				w.mu.Unlock()
				return wr.at, true
			}
		}
		from = len(w.writes)
		ch := w.changed
		w.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return time.Time{}, false
		}
	}
}

// waitCount waits until n writes in all contain sub.
func (w *lineWatch) waitCount(sub string, n int, limit time.Duration) bool {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		c := 0
		for _, wr := range w.writes {
			c += strings.Count(wr.text, sub)
		}
		ch := w.changed
		w.mu.Unlock()
		if c >= n {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return false
		}
	}
}

// directDriver sends turns straight to claude, as the smallest possible
// client would, with the arguments and environment cc-connect would use
// for the same config.
type directDriver struct {
	cfg agentproc.Config
	dir string
}

func newDirectDriver(tb testing.TB, configPath, dir string) *directDriver {
	tb.Helper()
	cfg, err := config.Load(configPath)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	return &directDriver{cfg: agentcfg.From(cfg), dir: dir}
}

// directProc is one claude process driven by directDriver.
type directProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// start spawns claude, resuming resumeID when not empty.
func (d *directDriver) start(tb testing.TB, resumeID string) *directProc {
	tb.Helper()
	cmd := exec.Command(d.cfg.Command, agentproc.BuildArgs(d.cfg, agentproc.StartOptions{Dir: d.dir, ResumeID: resumeID})...)
	cmd.Dir = d.dir
	cmd.Env = agentproc.BuildEnv(os.Environ(), d.cfg)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p := &directProc{cmd: cmd, stdin: stdin, out: bufio.NewReaderSize(stdout, 1<<20)}
	tb.Cleanup(func() { p.close() })
	return p
}

// turn writes one user message and reads stdout up to the result line; it
// returns how long that took and the result's session id.
func (p *directProc) turn(tb testing.TB, text string) time.Duration {
	tb.Helper()
	d, _ := p.turnID(tb, text)
	return d
}

func (p *directProc) turnID(tb testing.TB, text string) (time.Duration, string) {
	tb.Helper()
	line, err := json.Marshal(map[string]any{"type": "user", "message": map[string]string{"role": "user", "content": text}})
	if err != nil {
		tb.Fatal(err)
	}
	t0 := time.Now()
	if _, err := p.stdin.Write(append(line, '\n')); err != nil {
		tb.Fatal(err)
	}
	for {
		l, err := p.out.ReadBytes('\n')
		if err != nil {
			tb.Fatalf("reading claude's output before the result: %v", err)
		}
		if !bytes.Contains(l, []byte(`"type":"result"`)) {
			continue
		}
		d := time.Since(t0)
		var res struct {
			SessionID string `json:"session_id"`
			Result    string `json:"result"`
		}
		if err := json.Unmarshal(l, &res); err != nil || res.Result != "echo: "+text {
			tb.Fatalf("result %s: %v, want the echo of %q", l, err, text)
		}
		return d, res.SessionID
	}
}

func (p *directProc) close() {
	_ = p.stdin.Close()
	_ = p.cmd.Wait()
}

// oneShot spawns claude (resuming resumeID when not empty), runs one turn
// and closes it. It returns the time from the spawn to the result, and the
// session id.
func (d *directDriver) oneShot(tb testing.TB, resumeID, text string) (time.Duration, string) {
	tb.Helper()
	t0 := time.Now()
	p := d.start(tb, resumeID)
	_, id := p.turnID(tb, text)
	took := time.Since(t0)
	p.close()
	return took, id
}
