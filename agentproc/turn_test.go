package agentproc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"
)

// scriptedProcess is a Process on real pipes, read by Start's reader, with
// script in place of the CLI: it gets every stdin line and writes what it
// wants to stdout. The process ends when the test does.
func scriptedProcess(t *testing.T, script func(line []byte, out io.Writer)) *Process {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
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
			line, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			script(line, outW)
		}
	}()
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		p.readLoop(outR)
		_ = outR.Close()
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		<-cliDone
		_ = inR.Close()
		<-readerDone
		close(p.done)
		close(p.events)
	})
	return p
}

// TestTurnBuffersForASlowConsumer: a turn whose consumer reads nothing
// yet holds far more events than the process's channel, and the reader
// goes on reading meanwhile, so a control request (here the interrupt the
// consumer would send while it is behind) gets its answer. Then every
// event arrives, in order, and the result after them.
func TestTurnBuffersForASlowConsumer(t *testing.T) {
	const n = 4 * (eventBuffer + turnEventBuffer)
	line := relayLine()
	p := scriptedProcess(t, func(in []byte, out io.Writer) {
		var msg struct {
			Type      string `json:"type"`
			RequestID string `json:"request_id"`
		}
		_ = json.Unmarshal(in, &msg)
		switch msg.Type {
		case "user":
			for range n {
				_, _ = out.Write(line)
			}
		case "control_request":
			resp, _ := json.Marshal(map[string]any{"type": "control_response",
				"response": map[string]any{"subtype": "success", "request_id": msg.RequestID}})
			_, _ = out.Write(append(resp, '\n'))
			_, _ = out.Write(relayResultLine())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	turn, err := p.StartTurn(ctx, UserMessage{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Interrupt(ctx); err != nil {
		t.Fatalf("Interrupt while the turn's events wait unread: %v", err)
	}
	got := 0
	for ev := range turn.Events() {
		if _, ok := ev.(AssistantText); !ok {
			t.Fatalf("event %d is %T, want AssistantText", got, ev)
		}
		got++
	}
	res, err := turn.Result()
	if err != nil || res == nil {
		t.Fatalf("Result = %v, %v", res, err)
	}
	if got != n {
		t.Errorf("got %d events, want %d", got, n)
	}
	if _, err := p.StartTurn(ctx, UserMessage{Text: "again"}); errors.Is(err, ErrTurnInProgress) {
		t.Error("the ended turn still counts as running")
	}
}

// TestTurnUUIDChosen: the turn carries the uuid asked for, or a fresh one.
func TestTurnUUIDChosen(t *testing.T) {
	p := scriptedProcess(t, func(in []byte, out io.Writer) { _, _ = out.Write(relayResultLine()) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, want := range []string{"5b0c3a3e-2f7d-4a62-9a55-3c2d8f7b9e10", ""} {
		turn, err := p.StartTurn(ctx, UserMessage{UUID: want, Text: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := turn.Wait(nil); err != nil {
			t.Fatal(err)
		}
		if want != "" && turn.UUID() != want || want == "" && !ValidSessionID(turn.UUID()) {
			t.Errorf("UUID() = %q, want %q (a fresh uuid when empty)", turn.UUID(), want)
		}
	}
}
