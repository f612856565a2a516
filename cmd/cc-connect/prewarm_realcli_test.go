package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// spareReady finds the session ids of the spares the log reported ready.
var spareReady = regexp.MustCompile(`msg="Spare agent process ready".*session_id=([0-9a-f-]{36})`)

// TestRealCLIRunSpare: with agent.prewarm (1 by default) the real CLI
// is kept as a spare after a turn, a new session (here after !new) runs on
// it under the id it was started with, and a spare that shutdown closes
// unused leaves no transcript and made no API call.
func TestRealCLIRunSpare(t *testing.T) {
	t.Parallel()
	claude := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	config := writeRealConfig(t, claude)
	p := startBinaryEnv(t, []string{"CC_CONNECT_TEST_API_URL=" + api.URL()}, "run", "--config", config)

	p.write(t, "hello\n")
	p.waitOut(t, "echo: hello")
	p.waitErr(t, `msg="Spare agent process ready"`)
	first := spareIDs(p.stderr.String())
	if len(first) != 1 {
		t.Fatalf("spares ready after the first turn: %v, want one", first)
	}
	if n := len(api.Requests()); n != 1 {
		t.Fatalf("%d API requests after one turn and a spare, want 1", n)
	}

	p.write(t, "!new\n")
	p.waitOut(t, "Started a new session")
	p.write(t, "on the spare\n")
	p.waitOut(t, "echo: on the spare")
	p.waitErr(t, `msg="Taking a spare agent process"`)
	// The replacement, started after that turn.
	p.waitErrCount(t, `msg="Spare agent process ready"`, 2)
	p.stdin.Close()
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}

	ids := spareIDs(p.stderr.String())
	projects := filepath.Join(filepath.Dir(config), "home", ".claude", "projects")
	tx := transcriptIDs(t, projects)
	if len(tx) != 2 || !slices.Contains(tx, ids[0]) {
		t.Errorf("transcripts %v, want the first session's and the taken spare's %s", tx, ids[0])
	}
	if slices.Contains(tx, ids[1]) {
		t.Errorf("the spare closed unused at shutdown (%s) left a transcript", ids[1])
	}
	if n := len(api.Requests()); n != 2 {
		t.Errorf("%d API requests for two turns, want 2: a spare calls no API", n)
	}
}

// waitErrCount waits until stderr holds want n times, bounded, like
// waitErr, by the run's deadline.
func (p *process) waitErrCount(t *testing.T, want string, n int) {
	t.Helper()
	deadline := time.After(testenv.HangLimit(t, 60*time.Second))
	for strings.Count(p.stderr.String(), want) < n {
		select {
		case <-p.errLn:
		case <-p.exited:
			t.Fatalf("exited with %d of %d %q on stderr", strings.Count(p.stderr.String(), want), n, want)
		case <-deadline:
			t.Fatalf("%d of %d %q on stderr", strings.Count(p.stderr.String(), want), n, want)
		}
	}
}

func spareIDs(log string) []string {
	var ids []string
	for _, m := range spareReady.FindAllStringSubmatch(log, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// transcriptIDs lists the session ids of the transcripts under projects.
func transcriptIDs(t *testing.T, projects string) []string {
	t.Helper()
	var ids []string
	err := filepath.WalkDir(projects, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() && filepath.Ext(path) == ".jsonl" && filepath.Dir(filepath.Dir(path)) == projects {
			ids = append(ids, filepath.Base(path[:len(path)-len(".jsonl")]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}
