package engine

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/platform"
)

// The benchmarks of this package (scale_bench_test.go, relay_bench_test.go,
// startup_bench_test.go) run the Engine as the binary does: real agentproc
// processes, a text logger at info level, a chat adapter that costs nothing.
// They measure cc-connect's side only: the agents are child processes, so
// this process's heap, RSS and CPU time exclude them.

// benchChat is a chat adapter for benchmarks: Send hands each reply to the
// benchmark on a channel and does nothing else.
type benchChat struct {
	replies chan benchReply
	started chan struct{} // closed when the engine ran the adapter
	once    sync.Once
	// sendDelay is how long each Send takes, as a platform's Web API call
	// would; zero for most benchmarks.
	sendDelay time.Duration
}

type benchReply struct {
	thread string
	text   string
}

var _ platform.Adapter = (*benchChat)(nil)

func newBenchChat(buffer int) *benchChat {
	return &benchChat{replies: make(chan benchReply, buffer), started: make(chan struct{})}
}

func (c *benchChat) Name() string { return "bench" }

func (c *benchChat) Run(ctx context.Context, h platform.Handler) error {
	c.once.Do(func() { close(c.started) })
	<-ctx.Done()
	return nil
}

func (c *benchChat) Send(ctx context.Context, to platform.Target, text string) (platform.Target, error) {
	if c.sendDelay > 0 {
		time.Sleep(c.sendDelay) // the cost of a platform call, not a wait on an event
	}
	c.replies <- benchReply{thread: to.Thread, text: text}
	to.MessageID = "posted"
	return to, nil
}

// waitReplies waits for n replies that start with prefix, failing the
// benchmark on any other message or after a generous deadline.
func (c *benchChat) waitReplies(tb testing.TB, n int, prefix string) {
	tb.Helper()
	deadline := time.NewTimer(5 * time.Minute)
	defer deadline.Stop()
	for n > 0 {
		select {
		case r := <-c.replies:
			if !strings.HasPrefix(r.text, prefix) {
				tb.Fatalf("thread %q got %q, want a reply starting with %q", r.thread, r.text, prefix)
			}
			n--
		case <-deadline.C:
			tb.Fatalf("timed out with %d replies missing", n)
		}
	}
}

// benchEnv is a running engine for a benchmark.
type benchEnv struct {
	e     *Engine
	chat  *benchChat
	ws    string
	state string
	ids   int
	stop  func()
}

// startBenchEngine starts an engine bound to one workspace for every
// channel of the "bench" adapter. mutate may change the options and the
// engine before Run. stop cancels Run and waits for it.
func startBenchEngine(tb testing.TB, agent agentproc.Config, replyBuffer int, mutate func(*Options), before func(*Engine)) *benchEnv {
	tb.Helper()
	no := false
	opts := Options{
		Agent: agent,
		Bindings: []binding.Binding{{Platform: "bench", Channel: "*", Workspace: tb.TempDir(),
			AllowUsers: []string{"*"}, RequireMention: &no,
			// The replies checked are the prompt echoed alone.
			Setup: binding.Setup{SenderHeader: &no}}},
		StateDir:      tb.TempDir(),
		ShutdownGrace: 10 * time.Second,
		// What the binary logs at its default level, formatted and dropped.
		Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	if mutate != nil {
		mutate(&opts)
	}
	e, err := New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	if before != nil {
		before(e)
	}
	chat := newBenchChat(replyBuffer)
	e.AddAdapter(chat)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	var once sync.Once
	env := &benchEnv{e: e, chat: chat, ws: opts.Bindings[0].Workspace, state: opts.StateDir}
	env.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(2 * time.Minute):
				tb.Error("Run did not return after cancel")
			}
		})
	}
	tb.Cleanup(env.stop)
	// Running as the binary does: recovery done, the adapter started (its
	// goroutine is part of every baseline).
	select {
	case <-chat.started:
	case <-time.After(5 * time.Minute):
		tb.Fatal("the engine never started its adapter")
	}
	return env
}

// say delivers text to the session of thread, as an adapter would.
func (env *benchEnv) say(tb testing.TB, thread, text string) {
	tb.Helper()
	env.ids++
	m := platform.Message{
		ID:       "bench-" + strconv.Itoa(env.ids),
		Target:   platform.Target{Platform: "bench", Channel: "C1", Thread: thread},
		UserID:   "u1",
		UserName: "u1",
		Text:     text,
		Received: time.Now(),
	}
	if _, err := env.e.HandleMessage(context.Background(), m); err != nil {
		tb.Fatalf("HandleMessage: %v", err)
	}
}

// waitIdle waits until the engine has no work. A reply is posted just
// before its turn ends, so a message sent on the reply alone could find the
// session still busy and be queued behind it.
func (env *benchEnv) waitIdle(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := env.e.WaitIdle(ctx); err != nil {
		tb.Fatalf("WaitIdle: %v", err)
	}
}

// sessionCount is how many sessions the engine holds in memory.
func (env *benchEnv) sessionCount() int { return env.e.convs.Len() }

// reapAll asks every session to close its idle process, through the
// control the process cap uses, and waits until no process is live.
func (env *benchEnv) reapAll(tb testing.TB) {
	tb.Helper()
	env.e.convs.ReapIdle()
	env.waitLive(tb, 0)
}

// waitLive waits until exactly n processes hold a slot.
func (env *benchEnv) waitLive(tb testing.TB, n int) { waitLiveSlots(tb, env.e.slots, n) }

// memSnapshot is this process's own memory and goroutines at one moment.
type memSnapshot struct {
	heap       uint64 // live heap after a full GC
	stack      uint64 // goroutine stacks in use
	rss        uint64 // resident set, after returning freed memory to the OS
	goroutines int
}

// snapshot forces a GC and returns freed memory to the OS first, so that
// two snapshots compare what is really held.
func snapshot() memSnapshot {
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memSnapshot{heap: ms.HeapAlloc, stack: ms.StackInuse, rss: rssBytes(), goroutines: runtime.NumGoroutine()}
}

// rssBytes is VmRSS from /proc/self/status; 0 where there is none.
func rssBytes() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// perSessionKB is the growth from base to at, per session, in KiB. It may
// be negative when the runtime kept less than at the baseline.
func perSessionKB(at, base uint64, n int) float64 {
	return (float64(at) - float64(base)) / 1024 / float64(n)
}

// cpuTime is the user+system CPU time of this process (children excluded).
func benchCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fullBench reports whether the heavy sizes were asked for (CC_BENCH_FULL=1);
// otherwise benchmarks use sizes whose single run (make bench-smoke) takes
// seconds.
func fullBench() bool { return os.Getenv("CC_BENCH_FULL") == "1" }

// fakeClaudeAgent is the agent config running the fake claude binary with
// its own config dir.
func fakeClaudeAgent(tb testing.TB) agentproc.Config {
	tb.Helper()
	home := tb.TempDir()
	return agentproc.Config{
		Command:    fakeclaude.Build(tb),
		CloseGrace: 5 * time.Second,
		Env:        map[string]string{"HOME": home, "CLAUDE_CONFIG_DIR": filepath.Join(home, ".claude")},
	}
}

// BenchmarkScale runs many sessions on the fake claude at once, as one
// busy instance would: every session first starts its process (one turn
// each, all at once), then each op is one more turn in every session, all
// running concurrently on warm processes. Then every idle process is
// reaped, the sessions retire, and the engine stops.
//
// Metrics (cc-connect's own process; the agents are children and not
// counted): turns/s of the warm rounds, cold-turns/s of the first round
// (spawn included), CPU time per turn, heap and RSS per session with a
// live process and per idle session (after the reap), goroutines per live
// and per idle session, and goroutines left over after the sessions
// retired and after Run returned (both must be 0: no leak).
//
// 200 sessions with CC_BENCH_FULL=1; 20 otherwise, so that one run stays
// within seconds.
func BenchmarkScale(b *testing.B) {
	n := 20
	if fullBench() {
		n = 200
	}
	b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) { benchScale(b, n) })
}

// scaleRetireAfter is how long an idle session keeps its goroutine in the
// scale benchmark: long enough to measure the idle sessions after the reap,
// short enough to watch them retire.
const scaleRetireAfter = 3 * time.Second

func benchScale(b *testing.B, n int) {
	agent := fakeClaudeAgent(b)
	runtime.GC()
	g0 := runtime.NumGoroutine()
	env := startBenchEngine(b, agent, 4*n, func(o *Options) {
		o.IdleTimeout = 0 // processes stay live until reapAll
	}, func(e *Engine) { e.convs.SetTestHooks(conv.TestHooks{RetireAfter: scaleRetireAfter}) })
	base := snapshot()
	threads := make([]string, n)
	for i := range threads {
		threads[i] = fmt.Sprintf("T%03d", i)
	}
	round := func(text string) {
		for _, th := range threads {
			env.say(b, th, text)
		}
		env.chat.waitReplies(b, n, "echo: "+text)
		env.waitIdle(b)
	}

	coldStart := time.Now()
	round("hello")
	cold := time.Since(coldStart)
	env.waitLive(b, n)

	cpu0 := benchCPUTime()
	rounds := 0
	for b.Loop() {
		rounds++
		round(fmt.Sprintf("turn %d", rounds))
	}
	cpu := benchCPUTime() - cpu0
	turns := float64(rounds * n)
	b.ReportMetric(turns/b.Elapsed().Seconds(), "turns/s")
	b.ReportMetric(float64(n)/cold.Seconds(), "cold-turns/s")
	b.ReportMetric(float64(cpu.Microseconds())/turns, "cpu-µs/turn")

	live := snapshot()
	env.reapAll(b)
	idle := snapshot()
	idleSessions := env.sessionCount()
	b.ReportMetric(perSessionKB(live.heap, base.heap, n), "heap-KB/live")
	b.ReportMetric(perSessionKB(live.heap+live.stack, base.heap+base.stack, n), "heap+stack-KB/live")
	b.ReportMetric(perSessionKB(live.rss, base.rss, n), "rss-KB/live")
	b.ReportMetric(float64(live.goroutines-base.goroutines)/float64(n), "goroutines/live")
	if idleSessions > 0 {
		b.ReportMetric(perSessionKB(idle.heap, base.heap, idleSessions), "heap-KB/idle")
		b.ReportMetric(perSessionKB(idle.heap+idle.stack, base.heap+base.stack, idleSessions), "heap+stack-KB/idle")
		b.ReportMetric(perSessionKB(idle.rss, base.rss, idleSessions), "rss-KB/idle")
		b.ReportMetric(float64(idle.goroutines-base.goroutines)/float64(idleSessions), "goroutines/idle")
	}
	if idleSessions < n {
		b.Logf("%d of %d sessions had already retired when the idle figures were taken", n-idleSessions, n)
	}

	// Retirement has no event to wait on: poll until the sessions are gone.
	retired := waitGoroutines(base.goroutines, scaleRetireAfter+time.Minute, func() bool { return env.sessionCount() == 0 })
	b.ReportMetric(float64(retired-base.goroutines), "goroutines-left-retired")
	retiredDump := ""
	if retired > base.goroutines {
		retiredDump = goroutineDump()
	}
	env.stop()
	stopped := waitGoroutines(g0, time.Minute, nil)
	b.ReportMetric(float64(stopped-g0), "goroutines-left-stopped")
	if retired > base.goroutines || stopped > g0 {
		b.Errorf("goroutines leaked: %d after retirement (baseline %d), %d after Run returned (baseline %d)\nafter retirement:\n%s\nafter Run:\n%s",
			retired, base.goroutines, stopped, g0, retiredDump, goroutineDump())
	}
}

// waitGoroutines polls until cond holds (when not nil) and the goroutine
// count is at most want, or until limit; it returns the last count.
// Goroutines that are ending have no event to wait on.
func waitGoroutines(want int, limit time.Duration, cond func() bool) int {
	deadline := time.Now().Add(limit)
	for {
		n := runtime.NumGoroutine()
		if (cond == nil || cond()) && n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// goroutineDump is every goroutine's stack, for a leak report.
func goroutineDump() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// benchLines returns data's lines that contain sub, each with its newline.
func benchLines(data []byte, sub string) [][]byte {
	var out [][]byte
	for _, l := range bytes.SplitAfter(data, []byte("\n")) {
		if bytes.Contains(l, []byte(sub)) {
			out = append(out, l)
		}
	}
	return out
}
