package agentproc_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
)

// The capture tier for what the CLI does on its own: a background Bash
// call that ends after the turn's result, and a user message written while
// a turn runs (see capture_tools_test.go for the wrapper's wording).

// bgCommand blocks until the gate file exists, then prints bgdone.
const bgCommand = "while [ ! -f gate ]; do sleep 0.05; done; echo bgdone"

// TestRealCLICaptureBackgroundTask: Bash with run_in_background reports
// background_tasks_changed (the running tasks) and task_started
// (is_backgrounded), the turn's
// result comes while the task runs, and when it ends the CLI reports
// task_updated and task_notification, starts again by itself (a new
// system/init) and ends with a second result whose origin is the
// task-notification.
func TestRealCLICaptureBackgroundTask(t *testing.T) {
	t.Parallel()
	api := fakeapi.Start(t)
	c := startCapture(t, api, captureOpts{args: []string{"--permission-mode", "bypassPermissions"},
		env: map[string]string{"IS_SANDBOX": "1"}})
	gate := filepath.Join(c.dir, "gate")
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
	c.user("[[BG:" + bgCommand + "]]")
	changed := c.nextType("system", "background_tasks_changed")
	if tasks, _ := changed["tasks"].([]any); len(tasks) != 1 {
		t.Errorf("background_tasks_changed %v, want the one task", changed)
	}
	started := c.nextType("system", "task_started")
	if started["is_backgrounded"] != true || str(started, "task_type") != "local_bash" || str(started, "task_id") == "" {
		t.Errorf("task_started %v, want a backgrounded local_bash task with an id", started)
	}
	first := c.result()
	if first["is_error"] != false {
		t.Errorf("the turn's result %v", first)
	}
	if o := dig(first, "origin"); o != nil {
		t.Errorf("the turn's own result has origin %v, want none", o)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	updated := c.nextType("system", "task_updated")
	if str(updated, "task_id") != str(started, "task_id") || str(updated, "patch", "status") != "completed" {
		t.Errorf("task_updated %v, want the task completed", updated)
	}
	note := c.nextType("system", "task_notification")
	if str(note, "task_id") != str(started, "task_id") || str(note, "status") != "completed" ||
		!strings.Contains(str(note, "summary"), "completed") || str(note, "output_file") == "" {
		t.Errorf("task_notification %v, want completed with a summary and the output file", note)
	}
	if tasks, _ := c.nextType("system", "background_tasks_changed")["tasks"].([]any); len(tasks) != 0 {
		t.Errorf("background_tasks_changed after the end lists %v, want none", tasks)
	}
	c.nextType("system", "init")
	second := c.result()
	if str(second, "origin", "kind") != "task-notification" {
		t.Errorf("the second result's origin %v, want task-notification", dig(second, "origin"))
	}
	reqs := api.Requests()
	msgs := reqs[len(reqs)-1].Messages
	last := msgs[len(msgs)-1].Text()
	if !strings.Contains(last, "<task-notification>") || !strings.Contains(last, str(started, "task_id")) ||
		strings.Contains(last, "bgdone") {
		t.Errorf("the CLI's own request carries %q, want the task-notification without the output", last)
	}
	if str(second, "result") != "background task: "+str(note, "summary") {
		t.Errorf("the second result %q, want the fake model's answer to the notification", str(second, "result"))
	}
	var kinds []string
	for _, l := range c.lines() {
		if k := streamKind(l); strings.HasPrefix(k, "system:") || k == "result" {
			kinds = append(kinds, k)
		}
	}
	t.Logf("lines: %s", strings.Join(kinds, " "))
	c.finish()
	c.save("background_task", "Fake API marker: `[[BG:"+bgCommand+"]]` under --permission-mode\n"+
		"bypassPermissions (IS_SANDBOX=1): Bash with run_in_background; the gate is opened after the\n"+
		"turn's result, and the CLI reports the task's end and runs a turn of its own.")
}

// TestRealCLICaptureSteer: a user message written while a turn runs is
// acknowledged with command_lifecycle queued, taken into the running turn
// (command_lifecycle started, after the tool's result) and finished
// (completed) before the turn's one result.
func TestRealCLICaptureSteer(t *testing.T) {
	t.Parallel()
	api := fakeapi.Start(t)
	c, gate := gatedBash(t, api)
	c.nextType("system", "task_started")
	const id = "22222222-3333-4444-8555-666666666666"
	c.send(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": "use the other file"},
		"uuid": id})
	lifecycle := func(state string) func(map[string]any) bool {
		return func(m map[string]any) bool {
			return m["type"] == "command_lifecycle" && str(m, "command_uuid") == id && str(m, "state") == state
		}
	}
	c.next("queued", lifecycle("queued"))
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c.next("started", lifecycle("started"))
	c.next("completed", lifecycle("completed"))
	res := c.result()
	if reqs := api.Requests(); len(reqs) != 2 || len(reqs[1].MidTurnNotes) != 1 {
		t.Errorf("%d requests, want the tool's follow-up to carry the message", len(reqs))
	}
	if str(res, "result") != "tool said: started\nopened\nand you said: use the other file" {
		t.Errorf("result %q, want the answer to take the message in", str(res, "result"))
	}
	var results int
	for _, l := range c.lines() {
		if l["type"] == "result" {
			results++
		}
	}
	if results != 1 {
		t.Errorf("%d results, want one for the turn and the message taken into it", results)
	}
	c.finish()
	c.save("steer", "Fake API marker: a gated Bash call (see bash_progress); a user message with a uuid is\n"+
		"sent while it runs and taken into the running turn (command_lifecycle queued, started, completed).")
}
