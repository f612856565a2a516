package agentproc

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
)

// What the CLI does on its own (docs/claude-code.md, "Background work" and
// "Steering"): tasks that outlive the turn that started them, the turn the
// CLI runs by itself when one ends, and a user message taken into a running
// turn.

// TaskStarted is system/task_started: a tool call (Bash, a subagent) began
// as a task. Backgrounded tasks outlive the turn's result.
type TaskStarted struct {
	TaskID       string
	ToolUseID    string
	Description  string
	TaskType     string // e.g. "local_bash"
	Backgrounded bool
}

// TaskUpdated is system/task_updated: a task's status changed (e.g.
// "completed", "failed", "killed").
type TaskUpdated struct {
	TaskID string
	Status string
}

// TaskNotification is system/task_notification: a task ended. For a
// background task it comes after the turn's result, and the CLI then runs a
// turn of its own (an own Turn, see Process.Own).
type TaskNotification struct {
	TaskID     string
	ToolUseID  string
	Status     string
	Summary    string // e.g. `Background command "…" completed (exit code 0)`
	OutputFile string // where the task's output is; not inline
}

// BackgroundTask is one running background task.
type BackgroundTask struct {
	TaskID      string
	TaskType    string
	Description string
}

// BackgroundTasks is system/background_tasks_changed: the background
// tasks running now (none when the last one ended).
type BackgroundTasks struct {
	Tasks []BackgroundTask
}

// CommandState is a command_lifecycle line: what became of a user message
// written while a turn ran. "queued" when the CLI got it, "started" when it
// was taken into the running turn (the model reads it in its next
// request), "completed" when that turn's answer was written.
type CommandState struct {
	UUID  string
	State string
}

// Command states the CLI reports.
const (
	CommandQueued    = "queued"
	CommandStarted   = "started"
	CommandCompleted = "completed"
)

// OriginTaskNotification is Result.Origin of the turn the CLI ran by itself
// after a background task ended.
const OriginTaskNotification = "task-notification"

func (TaskStarted) isEvent()      {}
func (TaskUpdated) isEvent()      {}
func (TaskNotification) isEvent() {}
func (BackgroundTasks) isEvent()  {}
func (CommandState) isEvent()     {}

// wireTask is one entry of background_tasks_changed.
type wireTask struct {
	TaskID      string `json:"task_id"`
	TaskType    string `json:"task_type"`
	Description string `json:"description"`
}

// taskEvents decodes the task lines of system.
func taskEvents(w *wireLine) []Event {
	switch w.Subtype {
	case "task_started":
		return []Event{TaskStarted{TaskID: w.TaskID, ToolUseID: w.ToolUseID, Description: w.Description,
			TaskType: w.TaskType, Backgrounded: w.IsBackgrounded}}
	case "task_updated":
		if w.Patch == nil || w.Patch.Status == "" {
			return nil // a patch without news of the status
		}
		return []Event{TaskUpdated{TaskID: w.TaskID, Status: w.Patch.Status}}
	case "task_notification":
		return []Event{TaskNotification{TaskID: w.TaskID, ToolUseID: w.ToolUseID, Status: rawString(w.Status),
			Summary: w.Summary, OutputFile: w.OutputFile}}
	case "background_tasks_changed":
		bt := BackgroundTasks{Tasks: make([]BackgroundTask, 0, len(w.Tasks))}
		for _, t := range w.Tasks {
			bt.Tasks = append(bt.Tasks, BackgroundTask(t))
		}
		return []Event{bt}
	}
	return nil
}

// ownTurns hands over the turns the CLI starts by itself: a system/init
// while no turn of ours runs opens one, and it ends at its result like any
// other. The events that came between turns (a task's end) are its first.
// Process embeds it.
type ownTurns struct {
	ch chan *Turn // buffered: the reader never waits on it
	// loose counts messages written by Send, outside a turn, whose result
	// has not come: their turns are the caller's, read on Events.
	loose atomic.Int32

	mu    sync.Mutex // guards tasks and noted
	tasks []BackgroundTask
	// noted: a task's end was reported between turns and the CLI has yet
	// to start the turn of its own that answers it.
	noted bool
}

func newOwnTurns() ownTurns { return ownTurns{ch: make(chan *Turn, 4)} }

// Own delivers each turn the CLI starts by itself (after a background
// task ended), once it started. Read its Events and Result as for a turn of
// StartTurn's; StartTurn returns ErrTurnInProgress until it ended.
func (o *ownTurns) Own() <-chan *Turn { return o.ch }

// Background is the background tasks running now, as the CLI last
// reported them.
func (o *ownTurns) Background() []BackgroundTask {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]BackgroundTask(nil), o.tasks...)
}

// BackgroundBusy reports whether the process is working on its own:
// background tasks run, or one ended and the CLI is about to answer it in
// a turn of its own. Closing it now would lose that work.
func (o *ownTurns) BackgroundBusy() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.tasks) > 0 || o.noted
}

// stopped drops a task stop_task ended from the running ones: the CLI's
// own list without it follows its answer.
func (o *ownTurns) stopped(taskID string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.tasks = slices.DeleteFunc(slices.Clone(o.tasks), func(t BackgroundTask) bool { return t.TaskID == taskID })
}

// note follows what the reader routes: the running tasks, and a task's
// end between turns until a turn starts (current tells whether one is).
func (o *ownTurns) note(ev Event, current bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch e := ev.(type) {
	case BackgroundTasks:
		o.tasks = append(o.tasks[:0:0], e.Tasks...)
	case TaskNotification:
		// A task stop_task ended gets no answer of the CLI's own.
		o.noted = o.noted || !current && e.Status != "stopped"
	case Init:
		o.noted = false // a turn starts: it carries the notification
	}
}

// ownTurnLocked opens the turn the CLI started by itself (routeMu held, no
// turn current). When a turn of ours is being started at this moment it
// returns nil: the line goes to Events and that turn takes it first.
func (p *Process) ownTurnLocked() *Turn {
	if p.loose.Load() > 0 || !p.turnBusy.CompareAndSwap(false, true) {
		return nil
	}
	t := &Turn{p: p, own: true, uuid: uuid.NewString(), events: make(chan Event, turnEventBuffer),
		done: make(chan struct{}), stop: make(chan struct{}), stopWatch: func() bool { return true }}
	p.cur = t
	p.takeWaiting(t)
	select {
	case p.ownTurns.ch <- t:
	default:
		// Four own turns unread: the consumer is gone. The turn still
		// runs to its result; nobody reads it.
		p.log.Warn("Agent's own turn not taken", "session_id", p.SessionID())
	}
	return t
}

// Steer writes text into the running turn (a message sent while Claude
// works) and returns the uuid it carries. The CLI takes it into the turn's
// next request; CommandState events with that uuid say when ("started")
// and the turn ends with one result for both. ErrClosed when the process
// is gone.
func (t *Turn) Steer(ctx context.Context, text string) (string, error) {
	id := uuid.NewString()
	if err := t.SteerAs(ctx, id, text); err != nil {
		return "", err
	}
	return id, nil
}

// SteerAs is Steer with the uuid chosen by the caller: one journaled
// before the write, so that after a crash the transcript tells whether the
// CLI had the message.
func (t *Turn) SteerAs(ctx context.Context, id, text string) error {
	if err := t.p.sendUUID(ctx, id, text); err != nil {
		return fmt.Errorf("steering the running turn: %w", err)
	}
	return nil
}

// Own reports whether the CLI started this turn by itself.
func (t *Turn) Own() bool { return t.own }
