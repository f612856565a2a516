package agentproc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/internal/fakeapi"
)

// The capture tier for what the CLI's session transcript holds of a user
// message written while a turn runs: what cc-connect's recovery reads
// after a kill to tell whether a steered message was taken into its turn,
// ran as a turn of its own, or never reached the CLI (docs/turns.md,
// docs/claude-code.md item 7).

// steerTurnID and steerMsgID are the uuids the turn's prompt and the
// message written while it runs are sent with.
const (
	steerTurnID = "11111111-3333-4444-8555-666666666666"
	steerMsgID  = "22222222-3333-4444-8555-666666666666"
)

// steerCapture starts the CLI on a turn whose Bash call runs until the
// gate file exists, and writes the message while it runs (acknowledged
// with command_lifecycle queued).
func steerCapture(t *testing.T, api *fakeapi.Server, o captureOpts) (c *capture, gate, sid string) {
	t.Helper()
	o.args = append(o.args, "--permission-mode", "bypassPermissions")
	o.env = map[string]string{"IS_SANDBOX": "1"} // as root, bypassPermissions needs a sandbox
	c = startCapture(t, api, o)
	gate = filepath.Join(c.dir, "gate")
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
	c.send(map[string]any{"type": "user", "uuid": steerTurnID, "message": map[string]any{"role": "user",
		"content": "[[TOOL:echo started; while [ ! -f gate ]; do sleep 0.05; done; echo opened]]"}})
	sid = str(c.nextType("system", "init"), "session_id")
	c.nextType("system", "task_started")
	return c, gate, sid
}

// writeSteered writes the message the way agentproc's Turn.SteerAs does
// and waits for the CLI to queue it.
func (c *capture) writeSteered() {
	c.t.Helper()
	c.send(map[string]any{"type": "user", "uuid": steerMsgID, "message": map[string]any{"role": "user", "content": "use the other file"}})
	c.next("queued", lifecycleOf(steerMsgID, "queued"))
}

func lifecycleOf(id, state string) func(map[string]any) bool {
	return func(m map[string]any) bool {
		return m["type"] == "command_lifecycle" && str(m, "command_uuid") == id && str(m, "state") == state
	}
}

// kill ends the CLI as a SIGKILL of cc-connect's process group would.
func (c *capture) kill() {
	c.t.Helper()
	if err := c.cmd.Process.Kill(); err != nil {
		c.t.Fatal(err)
	}
	<-c.exit
}

// transcript is the path of the session's transcript under the capture's
// config folder.
func (c *capture) transcript(sid string) string {
	c.t.Helper()
	path, _, err := agentproc.FindTranscript(filepath.Join(c.home, ".claude"), sid)
	if err != nil {
		c.t.Fatal(err)
	}
	return path
}

// transcriptLines are the lines of the transcript at path, decoded.
func transcriptLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// transcriptKind names a transcript line for an ordered comparison:
// conversation lines by type (a user line holding a tool result as
// tool_result), queue operations by operation, attachments of a queued
// message as queued_command; other lines (bookkeeping, the session's
// first attachments) are "".
func transcriptKind(l map[string]any) string {
	switch l["type"] {
	case "user":
		if blocks, ok := dig(l, "message", "content").([]any); ok && len(blocks) > 0 {
			if b, _ := blocks[0].(map[string]any); b["type"] == "tool_result" {
				return "tool_result"
			}
		}
		return "user:" + str(l, "uuid")
	case "assistant":
		return "assistant"
	case "queue-operation":
		return "queue:" + str(l, "operation")
	case "attachment":
		if str(l, "attachment", "type") == "queued_command" {
			return "queued_command:" + str(l, "attachment", "source_uuid")
		}
	}
	return ""
}

// kinds lists the transcript's lines by transcriptKind, skipping "".
func kinds(lines []map[string]any) []string {
	var out []string
	for _, l := range lines {
		if k := transcriptKind(l); k != "" {
			out = append(out, k)
		}
	}
	return out
}

// saveTranscript adds the session's transcript to the capture's fixture,
// without the request dumps the CLI keeps in it (api-request-blob and
// -shape: the system prompt and tool list, large and of no use here).
func (c *capture) saveTranscript(name, path string) {
	c.t.Helper()
	if os.Getenv("CC_CONNECT_RECORD_FIXTURES") != "1" {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		c.t.Fatal(err)
	}
	var keep [][]byte
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if bytes.HasPrefix(l, []byte(`{"type":"api-request-blob"`)) || bytes.HasPrefix(l, []byte(`{"type":"api-request-shape"`)) {
			continue
		}
		l = bytes.ReplaceAll(l, []byte(c.dir), []byte("/work/proj"))
		keep = append(keep, bytes.ReplaceAll(l, []byte(c.home), []byte("/home/user")))
	}
	out := append(bytes.Join(keep, []byte("\n")), '\n')
	if err := os.WriteFile(filepath.Join("testdata", "captures", name, "transcript.jsonl"), out, 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// TestRealCLICaptureSteerTranscript: a message written while a tool runs
// and taken into the running turn has no user line of its own in the
// transcript: it is enqueued (queue-operation, no uuid), then, after the
// tool's result, removed from the queue as absorbed_mid_turn and kept as
// a queued_command attachment whose source_uuid is the uuid it was sent
// with; the turn's answer follows. So the turn's reply read back after
// its prompt holds the answer to both, and the message is found by its
// source_uuid (agentproc.ContainsAbsorbed), never as a user line.
func TestRealCLICaptureSteerTranscript(t *testing.T) {
	t.Parallel()
	api := fakeapi.Start(t)
	c, gate, sid := steerCapture(t, api, captureOpts{})
	c.writeSteered()
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c.next("started", lifecycleOf(steerMsgID, "started"))
	res := c.result()
	c.finish()
	path := c.transcript(sid)
	lines := transcriptLines(t, path)
	want := []string{"queue:enqueue", "queue:dequeue", "user:" + steerTurnID, "assistant", "assistant", "queue:enqueue",
		"tool_result", "queue:remove", "queued_command:" + steerMsgID, "assistant"}
	if got := kinds(lines); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("transcript lines\n%v, want\n%v", got, want)
	}
	for _, l := range lines {
		if l["type"] == "queue-operation" && str(l, "operation") == "remove" &&
			(str(l, "reason") != "absorbed_mid_turn" || str(l, "commandUuid") != steerMsgID) {
			t.Errorf("the queue's remove %v, want absorbed_mid_turn naming the message's uuid", l)
		}
	}
	if has, err := agentproc.ContainsAbsorbed(path, steerMsgID); err != nil || !has {
		t.Errorf("ContainsAbsorbed = %v, %v; want the message found taken in", has, err)
	}
	if has, err := agentproc.ContainsUUID(path, steerMsgID); err != nil || has {
		t.Errorf("ContainsUUID = %v, %v; want no user line of the message", has, err)
	}
	reply, found, err := agentproc.ReplyAfter(path, steerTurnID)
	if err != nil || !found || !strings.HasSuffix(reply, str(res, "result")) || !strings.Contains(reply, "and you said: use the other file") {
		t.Errorf("the turn's reply read back %q (%v, %v), want it to end with the answer to both, %q", reply, found, err, str(res, "result"))
	}
	if end, err := agentproc.ClassifyEnd(path); err != nil || end != agentproc.InterruptionNone {
		t.Errorf("ClassifyEnd = %q, %v; want none", end, err)
	}
	c.save("steer_transcript", "Fake API marker: a gated Bash call (see bash_progress); a user message with a uuid is\n"+
		"sent while it runs and taken into the running turn. transcript.jsonl is the session's transcript\n"+
		"(without the api-request-blob and -shape lines): the message is a queued_command attachment.")
	c.saveTranscript("steer_transcript", path)
}

// TestRealCLICaptureSteerAfterTool: a message written after the turn's
// last tool ran, while the model writes its answer, misses that turn: the
// turn ends with its own result, and only then does the CLI start the
// message (command_lifecycle started, a new system/init) as a turn of its
// own with its own result. Its transcript has a dequeue and then the
// message's user line under the uuid it was sent with, so the first
// turn's reply read back stops before it and the message's own reply
// follows its uuid.
func TestRealCLICaptureSteerAfterTool(t *testing.T) {
	t.Parallel()
	api := fakeapi.Start(t)
	c, gate, sid := steerCapture(t, api, captureOpts{})
	// The tool's follow-up request (the model's answer) streams until
	// released: the message is written while it does.
	api.SetModeOnce(fakeapi.ModeSlow)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), capTimeout)
	defer cancel()
	if _, err := api.WaitRequest(ctx, 2); err != nil {
		t.Fatal(err)
	}
	c.writeSteered()
	api.ReleaseSlow()
	first := c.result()
	c.next("started", lifecycleOf(steerMsgID, "started"))
	c.nextType("system", "init")
	second := c.result()
	c.next("completed", lifecycleOf(steerMsgID, "completed"))
	c.finish()
	if str(second, "result") != "echo: use the other file" || strings.Contains(str(first, "result"), "use the other file") {
		t.Errorf("results %q and %q, want the message answered by a turn of its own", str(first, "result"), str(second, "result"))
	}
	path := c.transcript(sid)
	want := []string{"queue:enqueue", "queue:dequeue", "user:" + steerTurnID, "assistant", "assistant",
		"tool_result", "queue:enqueue", "assistant", "queue:dequeue", "user:" + steerMsgID, "assistant"}
	if got := kinds(transcriptLines(t, path)); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("transcript lines\n%v, want\n%v", got, want)
	}
	if has, err := agentproc.ContainsUUID(path, steerMsgID); err != nil || !has {
		t.Errorf("ContainsUUID = %v, %v; want the message's user line", has, err)
	}
	if has, err := agentproc.ContainsAbsorbed(path, steerMsgID); err != nil || has {
		t.Errorf("ContainsAbsorbed = %v, %v; want it not taken into the first turn", has, err)
	}
	if reply, _, err := agentproc.ReplyAfter(path, steerTurnID); err != nil || strings.Contains(reply, "use the other file") {
		t.Errorf("the first turn's reply read back %q (%v), want it without the message's answer", reply, err)
	}
	if reply, _, err := agentproc.ReplyAfter(path, steerMsgID); err != nil || reply != "echo: use the other file" {
		t.Errorf("the message's reply read back %q (%v), want its own turn's", reply, err)
	}
	c.save("steer_after_tool", "Fake API marker: a gated Bash call (see bash_progress); the tool's follow-up request\n"+
		"streams slowly (fakeapi.ModeSlow) and a user message with a uuid is sent while it does: it runs\n"+
		"as a turn of its own after the first one's result. transcript.jsonl is the session's transcript\n"+
		"(without the api-request-blob and -shape lines).")
	c.saveTranscript("steer_after_tool", path)
}

// TestRealCLICaptureSteerKilled: the CLI killed (SIGKILL) with a message
// written while a tool ran. Before the tool's result, the message is only
// enqueued: the transcript holds no uuid of it, and the session resumed
// does not run it (so sending it again runs it once). Once it was taken
// in (command_lifecycle started), the transcript shows it absorbed
// (ContainsAbsorbed), the turn is cut (interrupted_turn), and the session
// resumed with the CLI's own "Continue from where you left off." carries
// it to the model in the history.
func TestRealCLICaptureSteerKilled(t *testing.T) {
	t.Parallel()
	for _, takenIn := range []bool{false, true} {
		name := map[bool]string{false: "queued", true: "taken_in"}[takenIn]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			api := fakeapi.Start(t)
			c, gate, sid := steerCapture(t, api, captureOpts{})
			c.writeSteered()
			if takenIn {
				// The request that carries it never answers: killed
				// after the CLI took it in.
				api.SetModeOnce(fakeapi.ModeSlow)
				if err := os.WriteFile(gate, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				c.next("started", lifecycleOf(steerMsgID, "started"))
				ctx, cancel := context.WithTimeout(t.Context(), capTimeout)
				defer cancel()
				if r, err := api.WaitRequest(ctx, 2); err != nil || len(r.MidTurnNotes) != 1 {
					t.Fatalf("the tool's follow-up request: %v, %d notes; want it to carry the message", err, len(r.MidTurnNotes))
				}
			}
			path := c.transcript(sid)
			if takenIn {
				// The attachment is written with the request: wait for
				// it rather than for a time.
				waitFor(t, "the transcript to show the message taken in", func() bool {
					has, err := agentproc.ContainsAbsorbed(path, steerMsgID)
					return err == nil && has
				})
			}
			c.kill()
			if has, err := agentproc.ContainsAbsorbed(path, steerMsgID); err != nil || has != takenIn {
				t.Errorf("ContainsAbsorbed = %v, %v after the kill; want %v", has, err, takenIn)
			}
			if has, err := agentproc.ContainsUUID(path, steerMsgID); err != nil || has {
				t.Errorf("ContainsUUID = %v, %v after the kill; want no user line of the message", has, err)
			}
			if end, err := agentproc.ClassifyEnd(path); err != nil || end != agentproc.InterruptionTurn {
				t.Errorf("ClassifyEnd = %q, %v after the kill; want interrupted_turn", end, err)
			}
			api.ReleaseSlow()
			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			before := len(api.Requests())
			r := startCapture(t, api, captureOpts{args: []string{"--permission-mode", "bypassPermissions", "--resume", sid},
				env: map[string]string{"IS_SANDBOX": "1"}, dir: c.dir, home: c.home})
			r.user(agentproc.ContinuePrompt)
			r.result()
			r.finish()
			reqs := api.Requests()[before:]
			if len(reqs) != 1 {
				t.Fatalf("%d requests after the resume, want one", len(reqs))
			}
			if notes := len(reqs[0].MidTurnNotes); notes != map[bool]int{false: 0, true: 1}[takenIn] {
				t.Errorf("the resumed request carries %d notes of the message, want it only once taken in", notes)
			}
			for _, m := range reqs[0].Messages {
				if m.Role == "user" && strings.TrimSpace(m.Text()) == "use the other file" {
					t.Errorf("the resumed session ran the message as a prompt of its own")
				}
			}
		})
	}
}

// waitFor checks cond, which nothing signals (a file the CLI writes),
// every 20 ms until it holds, for as long as a capture may take.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(capTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
