package engine

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/agentproc"
)

// relayEngineEvents is how many ~1 KB assistant lines one benchmarked turn
// streams; per-turn costs (the message, the session record, the reply) are
// spread over them.
const relayEngineEvents = 1000

// BenchmarkRelayEngine measures the relay path as it runs in production,
// per event: the agent's stdout read from a real pipe by agentproc, each
// ~1 KB stream-json line decoded and handed through Turn's callback to the
// session goroutine, which folds it into the turn. Each op is one turn of
// relayEngineEvents assistant lines between the CLI's init and result
// lines (recorded from the real CLI), on a warm process, from
// HandleMessage to the reply reaching the chat adapter and the turn ended.
//
// The agent is a separate process (this test binary, see
// TestRelayAgentHelper) answering each user line with the prepared turn in
// one write, so its cost is outside the figures.
// events/cpu-s divides by this process's CPU time (all goroutines and the
// GC), the steadier figure on a shared machine. Run it with -cpu 1 for the
// one-core figure.
func BenchmarkRelayEngine(b *testing.B) {
	dir := b.TempDir()
	turnFile := filepath.Join(dir, "turn.jsonl")
	if err := os.WriteFile(turnFile, relayEngineTurn(b), 0o600); err != nil {
		b.Fatal(err)
	}
	// The agent is this test binary running TestRelayAgentHelper; the
	// wrapper drops the CLI's flags, which the test binary would refuse.
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	script := filepath.Join(dir, "agent.sh")
	agentScript := fmt.Sprintf("#!/bin/sh\nexec %q -test.run='^TestRelayAgentHelper$'\n", self)
	if err := os.WriteFile(script, []byte(agentScript), 0o700); err != nil {
		b.Fatal(err)
	}
	agent := agentproc.Config{Command: script, Env: map[string]string{relayHelperEnv: turnFile}}
	env := startBenchEngine(b, agent, 16, nil, nil)
	env.say(b, "T1", "start")
	env.chat.waitReplies(b, 1, "echo: hi")
	env.waitIdle(b)

	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0 := benchCPUTime()
	b.ReportAllocs()
	for b.Loop() {
		env.say(b, "T1", "go on")
		env.chat.waitReplies(b, 1, "echo: hi")
		env.waitIdle(b)
	}
	cpu := benchCPUTime() - cpu0
	runtime.ReadMemStats(&ms1)
	events := float64(b.N * relayEngineEvents)
	b.ReportMetric(events/b.Elapsed().Seconds(), "events/s")
	if cpu > 0 {
		b.ReportMetric(events/cpu.Seconds(), "events/cpu-s")
	}
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/events, "allocs/event")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/events, "B/event")
}

// relayHelperEnv names the turn file TestRelayAgentHelper answers with.
const relayHelperEnv = "CC_CONNECT_BENCH_RELAY_TURN"

// TestRelayAgentHelper is not a test: it is the agent process of
// BenchmarkRelayEngine, which runs this test binary with relayHelperEnv
// set. It answers every line on stdin with the whole turn in one write, so
// that the agent's side costs a copy into the pipe per turn and no process
// start. Without the variable it skips.
func TestRelayAgentHelper(t *testing.T) {
	path := os.Getenv(relayHelperEnv)
	if path == "" {
		t.Skip("the agent process of BenchmarkRelayEngine, not a test")
	}
	turn, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadSlice('\n')
		if err != nil {
			return // stdin closed: the engine is closing the process
		}
		if !bytes.Contains(line, []byte(`"type":"user"`)) {
			// A control request (the engine's set-up, a mode): a turn
			// written for it would be one the CLI ran by itself, which
			// the engine posts as such.
			continue
		}
		if _, err := os.Stdout.Write(turn); err != nil {
			t.Fatal(err)
		}
	}
}

// relayEngineTurn is a turn as the CLI writes it: the init and result
// lines of a recorded real-CLI turn around relayEngineEvents assistant
// lines of about 1 KB.
func relayEngineTurn(tb testing.TB) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("..", "agentproc", "testdata", "full", "turn_hi.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(data, '\n')
	}
	init, result := benchLines(data, `"subtype":"init"`), benchLines(data, `"type":"result"`)
	if len(init) != 1 || len(result) != 1 {
		tb.Fatalf("fixture has %d init and %d result lines, want one each", len(init), len(result))
	}
	text := strings.Repeat("word ", 120)
	line := []byte(`{"type":"assistant","message":{"content":[{"text":"` + text + `","type":"text"}],"id":"msg_000000",` +
		`"model":"claude-opus-5-5","role":"assistant","stop_reason":null,"stop_sequence":null,"type":"message",` +
		`"usage":{"cache_creation_input_tokens":1500,"cache_read_input_tokens":2500,"input_tokens":7,"output_tokens":1},` +
		`"context_management":null},"parent_tool_use_id":null,"session_id":"caee0c21-d9bd-4b7b-b059-3f6c419163ed",` +
		`"uuid":"11af93ec-b7b2-4326-9629-1d12e34fd00d","timestamp":"2026-11-30T11:02:56.942Z","request_id":"req_fake000024"}` + "\n")
	var turn bytes.Buffer
	turn.Write(init[0])
	for range relayEngineEvents {
		turn.Write(line)
	}
	turn.Write(result[0])
	return turn.Bytes()
}
