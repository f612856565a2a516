package agentproc

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"runtime"
	"testing"
)

// relayTurnEvents is how many ~1 KB assistant lines one benchmarked turn
// streams before its result: enough that the per-turn costs (the user line
// written to stdin, the result) are a rounding error beside the per-event
// ones.
const relayTurnEvents = 1000

// BenchmarkRelayTurn measures what one live process costs cc-connect per
// event on the whole driver path: the CLI's stdout read from a real pipe,
// split into lines, decoded, sent on the events channel, and received by
// Turn, which hands each event to its callback, the engine's entry point.
// Each op is one turn of relayTurnEvents ~1 KB assistant lines and a
// result, answering a user line written to a real stdin pipe.
//
// The "CLI" is a goroutine of this process that answers each user line
// with one prebuilt write, so its cost is one memcpy into the pipe per
// turn; events/cpu-s counts the CPU time of the whole process (reader,
// consumer, GC and that writer), and is the steadier figure on a shared
// machine. Run it with -cpu 1 for the one-core figure.
func BenchmarkRelayTurn(b *testing.B) {
	var turn bytes.Buffer
	line := relayLine()
	for range relayTurnEvents {
		turn.Write(line)
	}
	turn.Write(relayResultLine())

	p, stop := pipedProcess(b, turn.Bytes())
	defer stop()

	ctx := context.Background()
	var events, texts int
	on := func(ev Event) {
		events++
		if _, ok := ev.(AssistantText); ok {
			texts++
		}
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0 := cpuTime()
	b.SetBytes(int64(turn.Len()))
	b.ReportAllocs()
	for b.Loop() {
		res, err := runTurn(ctx, p, "go on", on)
		if err != nil || res == nil {
			b.Fatalf("Turn = %v, %v", res, err)
		}
	}
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&ms1)
	if texts != events || events != b.N*relayTurnEvents {
		b.Fatalf("got %d events (%d texts), want %d texts", events, texts, b.N*relayTurnEvents)
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	if cpu > 0 {
		b.ReportMetric(float64(events)/cpu.Seconds(), "events/cpu-s")
	}
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(events), "allocs/event")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(events), "B/event")
}

// relayResultLine is the result line of the recorded real-CLI turn.
func relayResultLine() []byte {
	data, err := os.ReadFile("testdata/full/turn_hi.jsonl")
	if err != nil {
		panic(err)
	}
	for _, l := range bytes.Split(data, []byte("\n")) {
		if bytes.Contains(l, []byte(`"type":"result"`)) {
			return append(l, '\n')
		}
	}
	panic("no result line in testdata/full/turn_hi.jsonl")
}

// pipedProcess is a Process wired to real pipes and run by the same reader
// as Start's, with a goroutine in place of the CLI that answers every user
// line on stdin with turn. stop closes stdin, waits for that goroutine and
// the reader, and closes Events.
func pipedProcess(tb testing.TB, turn []byte) (*Process, func()) {
	tb.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	p := &Process{
		log:    slog.New(slog.DiscardHandler),
		stdin:  inW,
		stderr: &tailBuffer{max: defaultStderrTailBytes},
		events: make(chan Event, eventBuffer),
		done:   make(chan struct{}),
	}
	p.controls = newControls(p.writeJSON, p.done, p.log, p.SessionID, &p.wg)
	cliDone := make(chan struct{})
	go func() {
		defer close(cliDone)
		defer outW.Close()
		br := bufio.NewReader(inR)
		for {
			if _, err := br.ReadSlice('\n'); err != nil {
				_, _ = io.Copy(io.Discard, br)
				return
			}
			if _, err := outW.Write(turn); err != nil {
				return
			}
		}
	}()
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		p.readLoop(outR)
		_ = outR.Close()
	}()
	return p, func() {
		_ = inW.Close()
		<-cliDone
		_ = inR.Close()
		<-readerDone
		close(p.done)
		close(p.events)
	}
}
