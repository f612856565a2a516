package agentproc_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
)

// The capture tier (see capture_helper_test.go) for a spare process: one
// started with --session-id before any message is known, checked ready
// with initialize, then either closed unused or handed its first message
// later. What a pool of spares relies on (docs/claude-code.md, "Start-up
// and readiness"): the CLI answers initialize before any user message and
// idle; until a message comes it writes nothing to stdout, creates no
// transcript and calls no API; an unused one exits 0 on stdin EOF; the
// first message then runs under the id chosen at the start.

// sparePause is how long the ready spare waits for its first message in
// the capture: a stand-in for "any time later" (checked by hand for ten
// minutes); no event marks it.
const sparePause = time.Second

// transcriptsUnder lists the .jsonl files under the CLI's projects folder.
func transcriptsUnder(t *testing.T, home string) []string {
	t.Helper()
	var out []string
	root := filepath.Join(home, ".claude", "projects")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !d.IsDir() && filepath.Ext(path) == ".jsonl" {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRealCLICaptureSpare(t *testing.T) {
	t.Parallel()
	for _, used := range []bool{false, true} {
		name := map[bool]string{false: "spare_closed_unused", true: "spare_first_message_later"}[used]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			api := fakeapi.Start(t)
			id := uuid.NewString()
			began := time.Now()
			c := startCapture(t, api, captureOpts{args: []string{"--session-id", id}})
			c.control("init_1", map[string]any{"subtype": "initialize"})
			resp := c.nextType("control_response")
			t.Logf("spawn to the initialize answer: %v", time.Since(began))
			if str(resp, "response", "request_id") != "init_1" || str(resp, "response", "subtype") != "success" {
				t.Fatalf("initialize answer %v", resp)
			}
			answer, _ := dig(resp, "response", "response").(map[string]any)
			if answer["session_state"] != "idle" || answer["current_permission_mode"] != "default" ||
				answer["pid"] != float64(c.cmd.Process.Pid) || answer["claude_code_version"] == "" {
				t.Errorf("initialize answer: session_state %v, mode %v, pid %v (the CLI's %d), version %v",
					answer["session_state"], answer["current_permission_mode"], answer["pid"], c.cmd.Process.Pid,
					answer["claude_code_version"])
			}
			if n := len(c.lines()); n != 1 {
				t.Errorf("%d stdout lines before any message, want only the answer: %v", n, c.lines())
			}
			if tx := transcriptsUnder(t, c.home); len(tx) != 0 {
				t.Errorf("transcripts before any message: %v", tx)
			}
			if n, m := len(api.Requests()), len(api.OtherRequests()); n+m != 0 {
				t.Errorf("%d API requests and %d others before any message", n, m)
			}

			if !used {
				c.finish()
				if c.waitErr != nil {
					t.Errorf("exit after stdin EOF: %v, want 0", c.waitErr)
				}
				if n := len(c.lines()); n != 1 {
					t.Errorf("%d stdout lines from an unused spare, want only the answer", n)
				}
				if tx := transcriptsUnder(t, c.home); len(tx) != 0 {
					t.Errorf("transcripts of an unused spare: %v", tx)
				}
				if n := len(api.Requests()); n != 0 {
					t.Errorf("%d API requests from an unused spare", n)
				}
				c.save(name, "A process started with --session-id and sent initialize alone, then stdin closed: it\n"+
					"answers initialize (session_state idle), writes nothing more, creates no transcript, calls no\n"+
					"API, and exits 0.")
				return
			}
			time.Sleep(sparePause)
			began = time.Now()
			res := c.turn("the first message", nil, nil)
			t.Logf("first turn on the ready process: %v", time.Since(began))
			if str(res, "session_id") != id || str(res, "result") != "echo: the first message" || res["is_error"] != false {
				t.Errorf("result %v, want the echo under session %s", res, id)
			}
			if init := c.lines()[1]; str(init, "subtype") != "init" || str(init, "session_id") != id {
				t.Errorf("the line after the answer %v, want system/init of session %s", init, id)
			}
			if reqs := api.Requests(); len(reqs) != 1 || reqs[0].Prompt != "the first message" {
				t.Errorf("API requests %+v, want one carrying the message", reqs)
			}
			tx := transcriptsUnder(t, c.home)
			if len(tx) != 1 || filepath.Base(tx[0]) != id+".jsonl" {
				t.Errorf("transcripts %v, want %s.jsonl", tx, id)
			}
			c.finish()
			c.save(name, "A process started with --session-id and sent initialize alone; its first message comes\n"+
				"a second after the answer and runs as a new session under the id chosen at the start (init,\n"+
				"result and transcript name it).")
		})
	}
}
