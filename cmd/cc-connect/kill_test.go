package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeclaude"
)

// continueText is what recovery sends to resume a turn that was cut off.
const continueText = "Continue from where you left off."

// soakIterations is how many kill points TestSoakKillRestart tries:
// CC_SOAK_ITERATIONS (make soak sets 200), else enough for the normal run
// that the check that kills land mid-work is active.
func soakIterations(t *testing.T) int {
	if v := os.Getenv("CC_SOAK_ITERATIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CC_SOAK_ITERATIONS=%q: want a positive number", v)
		}
		return n
	}
	return 20
}

// TestSoakKillRestart runs the built binary against the fake claude,
// feeds it messages through the terminal chat, SIGKILLs it at a random
// point once they are all accepted (journaled) with follow-ups still
// queued, sometimes kills the restarted one too, and finally lets a last
// instance finish. Every message must have been processed exactly once and
// in order: it is once in the session's transcript, with only recovery's
// "Continue from where you left off." in between. The fake's record of the
// lines it read must hold each message too, first read in order; a message
// may be read twice only when the agent that read it first was killed
// (with its cc-connect) before it wrote it to the transcript, so it never
// processed it. The restarted instances read no stdin: what they run comes
// from the inbox.
//
// The iterations are independent (each its own config, state and random
// stream, drawn from the seed and its number) and run in parallel, since
// most of one is waiting for processes to start.
func TestSoakKillRestart(t *testing.T) {
	n := soakIterations(t)
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("CC_SOAK_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (set CC_SOAK_SEED to replay), %d iterations", seed, n)
	var st soakStats
	t.Run("kills", func(t *testing.T) {
		for i := range n {
			t.Run(fmt.Sprintf("kill%d", i), func(t *testing.T) {
				t.Parallel()
				rng := rand.New(rand.NewPCG(seed, uint64(i)))
				killRestartOnce(t, rng, i, &st)
			})
		}
	})
	kills, recovered, continued := st.counts()
	t.Logf("%d iterations, %d SIGKILLs: %d restarts found work pending, %d turns resumed with %q",
		n, kills, recovered, continued, continueText)
	if n >= 20 && recovered == 0 {
		t.Error("no kill landed while work was pending: the kill points do not exercise recovery")
	}
}

// soakStats count what the kills hit, so a soak that never lands mid-turn
// is noticed.
type soakStats struct {
	mu                          sync.Mutex // guards the counts
	kills, recovered, continued int
}

func (st *soakStats) add(kills, recovered, continued int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.kills += kills
	st.recovered += recovered
	st.continued += continued
}

func (st *soakStats) counts() (kills, recovered, continued int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.kills, st.recovered, st.continued
}

func killRestartOnce(t *testing.T, rng *rand.Rand, iter int, st *soakStats) {
	dir := t.TempDir()
	record := filepath.Join(dir, "record.jsonl")
	path := setup(t, "", fmt.Sprintf("FAKECLAUDE_RECORD = %q", record))
	stateDir := filepath.Join(filepath.Dir(path), "state")

	// Messages of a few ms each, some with a tool call, so a kill lands
	// before, during and between turns.
	k := 2 + rng.IntN(4)
	var sent []string
	for j := range k {
		text := fmt.Sprintf("it%d-m%d [[SLOW:%d]]", iter, j, 1+rng.IntN(8))
		if rng.IntN(3) == 0 {
			text = fmt.Sprintf("it%d-m%d [[TOOL:echo %d]]", iter, j, j)
		}
		sent = append(sent, text)
	}

	first := startBinary(t, "run", "--config", path)
	first.waitErr(t, "cc-connect started")
	first.write(t, strings.Join(sent, "\n")+"\n")
	// Every line is accepted once its journal record is written (the
	// record is the id's seen mark too): no event reaches the test for it.
	waitFile(t, "all messages accepted", func() bool { return len(acceptedIDs(filepath.Join(stateDir, "inbox"))) >= k })
	if kill(t, first, time.Duration(rng.IntN(120))*time.Millisecond) {
		st.add(1, 0, 0)
	}
	var stderr []string

	// Sometimes kill the instance that is recovering, too.
	for rng.IntN(2) == 0 {
		again := startBinary(t, "run", "--config", path)
		again.waitErr(t, "cc-connect started")
		if kill(t, again, time.Duration(rng.IntN(80))*time.Millisecond) {
			st.add(1, 0, 0)
		}
		stderr = append(stderr, again.stderr.String())
	}

	last := startBinary(t, "run", "--config", path)
	last.stdin.Close() // nothing new: only the inbox
	if code := last.exitCode(t); code != 0 {
		t.Fatalf("last instance exit code %d\n%s", code, last.stderr.String())
	}
	if strings.Contains(strings.Join(append(stderr, last.stderr.String()), ""), "Recovering pending messages") {
		st.add(0, 1, 0)
	}

	var got []string
	for _, line := range transcriptPrompts(t, filepath.Join(filepath.Dir(path), "claude-config")) {
		if line == continueText {
			st.add(0, 0, 1)
			continue
		}
		got = append(got, line)
	}
	if strings.Join(got, "\n") != strings.Join(sent, "\n") {
		t.Fatalf("the transcript holds (continuations left out):\n%s\nwant each message once, in order:\n%s",
			strings.Join(got, "\n"), strings.Join(sent, "\n"))
	}
	var firstReads []string
	seen := map[string]bool{}
	for _, line := range fakeclaude.Texts(fakeclaude.ReadRecord(t, record)) {
		if line != continueText && !seen[line] {
			seen[line] = true
			firstReads = append(firstReads, line)
		}
	}
	if strings.Join(firstReads, "\n") != strings.Join(sent, "\n") {
		t.Fatalf("claude first read:\n%s\nwant every message, in order:\n%s", strings.Join(firstReads, "\n"), strings.Join(sent, "\n"))
	}
	if fi, err := os.Stat(filepath.Join(stateDir, "inbox")); err == nil && fi.IsDir() {
		des, _ := os.ReadDir(filepath.Join(stateDir, "inbox"))
		for _, de := range des {
			if de.Name() == "seen.jsonl" {
				continue
			}
			if fi, err := de.Info(); err == nil && fi.Size() != 0 {
				t.Errorf("inbox %s still holds %d bytes after the last instance finished", de.Name(), fi.Size())
			}
		}
	}
}

// acceptedIDs are the message ids the inbox folder holds as accepted: the
// add records of its journals and the ids compacted into seen.jsonl.
func acceptedIDs(dir string) map[string]bool {
	ids := map[string]bool{}
	des, _ := os.ReadDir(dir)
	for _, de := range des {
		data, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			var r struct {
				Op    string `json:"op"`
				ID    string `json:"id"`
				Entry struct {
					ID string `json:"id"`
				} `json:"entry"`
			}
			if json.Unmarshal([]byte(line), &r) != nil {
				continue // a line cut by a kill
			}
			switch {
			case de.Name() == "seen.jsonl":
				_, id, _ := strings.Cut(r.ID, "\x00")
				ids[id] = true
			case r.Op == "add":
				ids[r.Entry.ID] = true
			}
		}
	}
	return ids
}

// kill SIGKILLs p after d and waits for it to be gone. It reports false
// when p had exited by itself first.
func kill(t *testing.T, p *process, d time.Duration) bool {
	t.Helper()
	select {
	case <-p.exited:
		return false
	case <-time.After(d):
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
	return true
}

// waitFile polls cond: for files another process writes there is no event
// to wait on.
func waitFile(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// transcriptPrompts returns the prompts (user lines with text content) of
// every transcript under configDir, file by file in the order they were
// last written.
func transcriptPrompts(t *testing.T, configDir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(configDir, "projects", "*", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(files, func(i, j int) bool {
		a, _ := os.Stat(files[i])
		b, _ := os.Stat(files[j])
		return a.ModTime().Before(b.ModTime())
	})
	var out []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			var l struct {
				Type    string `json:"type"`
				Message struct {
					Content json.RawMessage `json:"content"`
				} `json:"message"`
			}
			if json.Unmarshal([]byte(line), &l) != nil || l.Type != "user" {
				continue // a line cut by a kill, or not a prompt
			}
			var text string
			if json.Unmarshal(l.Message.Content, &text) == nil {
				out = append(out, text)
			}
		}
	}
	return out
}

// TestLockLeftByKilledProcessDoesNotBlock: a cc-connect killed with SIGKILL
// leaves its lock files behind, and the next start takes them.
func TestLockLeftByKilledProcessDoesNotBlock(t *testing.T) {
	t.Parallel()
	path := setup(t, "")
	first := startBinary(t, "run", "--config", path)
	first.waitErr(t, "cc-connect started")
	kill(t, first, 0)
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), "state", "locks", "instance.lock")); err != nil {
		t.Fatalf("lock file after the kill: %v", err)
	}
	second := startBinary(t, "run", "--config", path)
	second.waitErr(t, "cc-connect started")
	second.stdin.Close()
	if code := second.exitCode(t); code != 0 {
		t.Errorf("second instance exit code %d", code)
	}
}

// TestRunRefusesSharedToken: two cc-connects with different state dirs but
// one bot token would steal each other's events; the second exits non-zero
// naming the holder's pid and the lock file, and never the token.
func TestRunRefusesSharedToken(t *testing.T) {
	t.Parallel()
	token := "123456:soak-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	tg := fmt.Sprintf(`
[[platforms]]
name = "tg"
type = "telegram"
token = %q
api_url = "http://127.0.0.1:1"
[[bindings]]
platform = "tg"
channel = "42"
workspace = "ws"
allow_users = ["*"]
`, token)
	var paths []string
	for range 2 {
		path := setup(t, "")
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(tg); err != nil {
			t.Fatal(err)
		}
		f.Close()
		paths = append(paths, path)
	}
	first := startBinary(t, "run", "--config", paths[0])
	first.waitErr(t, "cc-connect started")
	second := startBinary(t, "run", "--config", paths[1])
	if code := second.exitCode(t); code == 0 {
		t.Fatal("second instance on the same token exited 0")
	}
	msg := second.stderr.String()
	want := "the bot token of platform tg is in use by pid " + strconv.Itoa(first.cmd.Process.Pid)
	if !strings.Contains(msg, want) || !strings.Contains(msg, "token-") || strings.Contains(msg, token) {
		t.Errorf("second instance stderr lacks %q and the lock file, or shows the token:\n%s", want, msg)
	}
	kill(t, first, 0)
}
