package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRunMetricsCountTurns: after turns through the binary and the fake
// claude, /metrics shows them: turns by outcome, their durations, the
// platform's messages, context use, and no turn still running.
func TestRunMetricsCountTurns(t *testing.T) {
	t.Parallel()
	p, addr := startWithMetrics(t)
	p.write(t, "one\n")
	p.waitOut(t, "echo: one")
	p.write(t, "two\n")
	p.waitOut(t, "echo: two")
	p.waitOut(t, "[ctx:")
	// The spare process (agent.prewarm, 1 by default) started after the
	// first turn counts as a live process too.
	p.waitErr(t, `msg="Spare agent process ready"`)

	// The reply is posted before the turn is counted as finished, and a
	// separate process gives no event for that: poll with a deadline.
	var text string
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		text = string(body)
		if strings.Contains(text, `cc_connect_turns_total{outcome="ok"} 2`+"\n") &&
			strings.Contains(text, `cc_connect_sessions{state="idle"} 1`+"\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("turns never counted:\n%s", text)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, want := range []string{
		"cc_connect_turns_started_total 2",
		`cc_connect_turns_total{outcome="ok"} 2`,
		`cc_connect_turn_duration_seconds_count{outcome="ok"} 2`,
		`cc_connect_platform_events_total{kind="message",platform="tty"} 2`,
		"cc_connect_context_percent_count 2",
		"cc_connect_turns_running 0",
		`cc_connect_sessions{state="idle"} 1`,
		"cc_connect_agent_processes 2",
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	p.stdin.Close()
	if code := p.exitCode(t); code != exitOK {
		t.Fatalf("exit %d", code)
	}
}
