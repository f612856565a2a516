package main

import (
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// startWithMetrics runs the binary with the fake claude and [metrics] on
// a free port, and returns it with the address it serves on.
func startWithMetrics(t *testing.T) (*process, string) {
	t.Helper()
	path := setup(t, "\n[metrics]\naddr = \"127.0.0.1:0\"\n")
	p := startBinary(t, "run", "--config", path)
	p.waitErr(t, "Serving metrics")
	m := regexp.MustCompile(`Serving metrics.* addr=(\S+)`).FindStringSubmatch(p.stderr.String())
	if m == nil {
		t.Fatalf("no address in the log:\n%s", p.stderr.String())
	}
	return p, m[1]
}

// TestRunServesMetricsUntilShutdown: with [metrics] addr set, `run` serves
// /healthz and /metrics while it runs and stops serving when it exits.
func TestRunServesMetricsUntilShutdown(t *testing.T) {
	t.Parallel()
	p, addr := startWithMetrics(t)
	for path, want := range map[string]string{"/healthz": "ok", "/metrics": "cc_connect_turns_started_total"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d, body lacks %q", path, resp.StatusCode, want)
		}
	}
	p.stdin.Close() // end of input: the local chat shuts cc-connect down
	if code := p.exitCode(t); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("metrics still served after exit")
	}
}

func TestRunFailsWhenTheMetricsPortIsTaken(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	path := setup(t, "\n[metrics]\naddr = \""+busy.Addr().String()+"\"\n")
	p := startBinary(t, "run", "--config", path)
	p.stdin.Close()
	if code := p.exitCode(t); code != exitFailure {
		t.Errorf("exit %d, want %d", code, exitFailure)
	}
	if !strings.Contains(p.stderr.String(), "Serving metrics failed") {
		t.Errorf("stderr does not say why:\n%s", p.stderr.String())
	}
}
