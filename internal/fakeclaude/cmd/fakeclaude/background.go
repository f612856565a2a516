package main

import (
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/google/uuid"
)

// What Claude Code 2.1.332 does on its own (agentproc's captures
// background_task and steer): a background Bash task that ends after its
// turn's result, and the turn the CLI then runs by itself.

var reBG = regexp.MustCompile(`\[\[BG(?::([^\]]*))?\]\]`)

// bgTask is a background task the fake runs: it ends when its gate file
// exists (at once without one).
type bgTask struct {
	id, desc, gate string
}

// turnBackground starts a background task and ends the turn while it
// runs; a goroutine waits for the task's end and queues the CLI's own turn.
func (f *fake) turnBackground(t *turnState, gate string) resultLine {
	f.toolSeq++
	toolID := fmt.Sprintf("toolu_fake%06d", f.toolSeq)
	task := bgTask{id: fmt.Sprintf("bgtask%04d", f.toolSeq), desc: "Run in the background", gate: gate}
	msgID := f.newMsgID()
	u := f.apiCall(false)
	f.emitToolCall(t, msgID, map[string]any{"type": "tool_use", "id": toolID, "name": "Bash",
		"input": map[string]any{"command": "sleep 1", "description": task.desc, "run_in_background": true}}, u)
	f.emitTasks(task)
	f.out.line(map[string]any{"type": "system", "subtype": "task_started", "task_id": task.id,
		"tool_use_id": toolID, "description": task.desc, "is_backgrounded": true, "task_type": "local_bash",
		"uuid": uuid.NewString(), "session_id": f.sessionID})
	content := "Command running in background with ID: " + task.id + ". You will be notified when it completes."
	f.emitToolResult(t, toolID, content, false)
	reply := "tool said: " + content
	f.reply(t, reply, false)
	stop := make(chan struct{})
	f.mu.Lock()
	if f.bgStops == nil {
		f.bgStops = map[string]chan struct{}{}
	}
	f.bgStops[task.id] = stop
	f.mu.Unlock()
	go func() {
		for task.gate != "" {
			if _, err := os.Stat(task.gate); err == nil {
				break
			}
			select {
			case <-stop:
				return // stop_task reported its end
			case <-time.After(10 * time.Millisecond):
			}
		}
		f.mu.Lock()
		_, running := f.bgStops[task.id]
		delete(f.bgStops, task.id)
		f.mu.Unlock()
		if running {
			f.own <- task
		}
	}()
	return success(reply)
}

// emitTasks writes background_tasks_changed listing tasks.
func (f *fake) emitTasks(tasks ...bgTask) {
	list := []any{}
	for _, t := range tasks {
		list = append(list, map[string]any{"task_id": t.id, "task_type": "local_bash", "description": t.desc})
	}
	f.out.line(map[string]any{"type": "system", "subtype": "background_tasks_changed", "tasks": list,
		"uuid": uuid.NewString(), "session_id": f.sessionID})
}

// runOwnTurn reports the task's end and runs the turn the CLI starts by
// itself: a new init, the model's answer to the notification, and a
// result of origin task-notification.
func (f *fake) runOwnTurn(task bgTask) {
	summary := fmt.Sprintf("Background command %q completed (exit code 0)", task.desc)
	f.out.line(map[string]any{"type": "system", "subtype": "task_updated", "task_id": task.id,
		"patch": map[string]any{"status": "completed", "end_time": time.Now().UnixMilli()},
		"uuid":  uuid.NewString(), "session_id": f.sessionID})
	f.out.line(map[string]any{"type": "system", "subtype": "task_notification", "task_id": task.id,
		"status": "completed", "output_file": "/tmp/tasks/" + task.id + ".output", "summary": summary,
		"uuid": uuid.NewString(), "session_id": f.sessionID})
	f.emitTasks()
	t := &turnState{msg: userMsg{text: "<task-notification>" + summary + "</task-notification>", uuid: uuid.NewString()},
		interrupt: make(chan struct{}), answer: make(chan permAnswer, 1)}
	f.mu.Lock()
	f.cur = t
	t.model = f.model
	f.mu.Unlock()
	start := time.Now()
	f.emitInit(t.model)
	// The turn has begun, nothing of it is in the transcript yet: a test
	// holds it here to have it write after something the host does.
	f.holdAt("FAKECLAUDE_OWN_GATE")
	reply := "background task: " + summary
	f.reply(t, reply, false)
	res := success(reply)
	res.Origin = map[string]any{"kind": "task-notification"}
	res.DurationMs = time.Since(start).Milliseconds()
	f.finish(t, res)
}

// emitCommand writes a command_lifecycle line for a user message written
// while a turn ran.
func (f *fake) emitCommand(id, state string) {
	f.out.line(map[string]any{"type": "command_lifecycle", "command_uuid": id, "state": state,
		"uuid": uuid.NewString(), "session_id": f.sessionID})
}

// emitStopped reports a background task that stop_task ended (as the CLI
// does: killed, then a notification of status stopped, and no turn of its
// own). Called with f.mu held.
func (f *fake) emitStopped(id string) {
	f.out.line(map[string]any{"type": "system", "subtype": "task_updated", "task_id": id,
		"patch": map[string]any{"status": "killed", "end_time": time.Now().UnixMilli()},
		"uuid":  uuid.NewString(), "session_id": f.sessionID})
	f.out.line(map[string]any{"type": "system", "subtype": "task_notification", "task_id": id,
		"status": "stopped", "output_file": "/tmp/tasks/" + id + ".output", "summary": "Run in the background",
		"uuid": uuid.NewString(), "session_id": f.sessionID})
	f.emitTasks()
}
