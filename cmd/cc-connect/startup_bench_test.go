package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/google/uuid"
)

// startupBenchSessions is how many sessions BenchmarkStartupBinary persists.
const startupBenchSessions = 1000

// BenchmarkStartupBinary starts the cc-connect binary on a state dir that
// holds startupBenchSessions persisted sessions, one of them the local
// chat's own, with a transcript to resume. The agent is the fake claude
// behind a wrapper that logs every spawn. Each op starts the binary, waits
// for its "cc-connect started" log line, types a message for the persisted
// session, waits for the reply, then ends the input and waits for the exit.
//
// Metrics: started-ms (exec to the started line: config, locks, engine and
// adapters ready), first-reply-ms (exec to the reply: the resumed agent's
// spawn and turn included), spawns-before-msg (agents started before the
// message: must be 0) and spawns/op (must be 1).
func BenchmarkStartupBinary(b *testing.B) {
	bin := buildBinary(b)
	dir := b.TempDir()
	spawnLog := filepath.Join(dir, "spawns.log")
	wrapper := filepath.Join(dir, "claude")
	// `claude --version` (run's check of the installed CLI) is not an
	// agent: only the others are counted.
	script := fmt.Sprintf("#!/bin/sh\n[ \"$1\" = --version ] || echo $$ >> %q\nexec %q \"$@\"\n", spawnLog, fakeclaude.Build(b))
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		b.Fatal(err)
	}
	cfgPath := writeConfig(b, dir, fmt.Sprintf(`
[state]
dir = "state"
[agent]
command = %q
env = { CLAUDE_CONFIG_DIR = %q }
# The spawns counted are the ones a message needs; a spare (agent.prewarm)
# would start after the turn, racing the shutdown.
prewarm = 0
`, wrapper, filepath.Join(dir, "claude-config"))+localChatTOML)

	// The local chat's session, made the normal way; then the others.
	runBinaryTurn(b, bin, cfgPath, spawnLog, "hello", nil)
	seedOtherSessions(b, filepath.Join(dir, "state", "sessions"), startupBenchSessions-1)

	var started, replied []time.Duration
	var before, spawned int
	for b.Loop() {
		s, r, nb, n := runBinaryTurn(b, bin, cfgPath, spawnLog, "again", &before)
		started, replied = append(started, s), append(replied, r)
		before, spawned = nb, spawned+n
	}
	b.ReportMetric(p50ms(started), "started-ms")
	b.ReportMetric(p50ms(replied), "first-reply-ms")
	b.ReportMetric(float64(before)/float64(b.N), "spawns-before-msg")
	b.ReportMetric(float64(spawned)/float64(b.N), "spawns/op")
	if before != 0 || spawned != b.N {
		b.Errorf("%d agents spawned before the message and %d in all over %d starts, want 0 and %d", before, spawned, b.N, b.N)
	}
}

// runBinaryTurn runs the binary for one message and returns the time to
// its started line and to the reply. When before is not nil it returns
// *before plus the spawns logged before the message, and the spawns of
// the whole run.
func runBinaryTurn(tb testing.TB, bin, cfgPath, spawnLog, text string, before *int) (time.Duration, time.Duration, int, int) {
	tb.Helper()
	spawns0 := countLines(spawnLog)
	cmd := exec.Command(bin, "run", "--config", cfgPath)
	cmd.Env = append(os.Environ(), "USER=bench")
	stdin, stdout, stderr := pipes(tb, cmd)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	var errText strings.Builder
	startedAt := make(chan time.Duration, 1)
	var readers sync.WaitGroup
	readers.Go(func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "cc-connect started") {
				startedAt <- time.Since(t0)
			}
			errText.WriteString(sc.Text() + "\n")
		}
		close(startedAt)
	})
	var started time.Duration
	select {
	case d, ok := <-startedAt:
		if !ok {
			readers.Wait()
			tb.Fatalf("cc-connect exited before starting:\n%s", errText.String())
		}
		started = d
	case <-time.After(time.Minute):
		tb.Fatal("cc-connect did not log its start within a minute")
	}
	nb := 0
	if before != nil {
		nb = *before + countLines(spawnLog) - spawns0
	}
	if _, err := io.WriteString(stdin, text+"\n"); err != nil {
		tb.Fatal(err)
	}
	var replied time.Duration
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "echo: "+text) {
			replied = time.Since(t0)
			break
		}
	}
	_ = stdin.Close()
	_, _ = io.Copy(io.Discard, stdout)
	readers.Wait()
	if err := cmd.Wait(); err != nil || replied == 0 {
		tb.Fatalf("cc-connect: %v, reply seen: %v\n%s", err, replied != 0, errText.String())
	}
	return started, replied, nb, countLines(spawnLog) - spawns0
}

// seedOtherSessions writes n session records of other threads next to the
// local chat's one, named and shaped as engine/store.go names and writes
// them (a JSON file per session key), so that the state dir holds as many
// sessions as a long-running instance would.
func seedOtherSessions(tb testing.TB, dir string, n int) {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		tb.Fatalf("want the local chat's session alone in %s: %v, %v", dir, entries, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, entries[0].Name()))
	if err != nil {
		tb.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(data, &rec); err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		thread := fmt.Sprintf("T%04d", i)
		key := "tty/local/" + thread
		rec["key"], rec["thread"], rec["session_id"] = key, thread, uuid.NewString()
		out, err := json.MarshalIndent(rec, "", "  ")
		if err != nil {
			tb.Fatal(err)
		}
		sum := sha256.Sum256([]byte(key))
		if err := os.WriteFile(filepath.Join(dir, hex.EncodeToString(sum[:16])+".json"), out, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
}

// countLines is the number of lines in path; 0 when it does not exist.
func countLines(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(data), "\n")
}
