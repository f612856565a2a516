package agentproc_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/agentproc"
)

// TestRealCLIOwnTurn: a background task that ends after its turn's result
// makes the CLI run a turn by itself; agentproc hands it over on Own, with
// the task's end as its first events and a result of origin
// task-notification, and Background lists the task while it runs.
func TestRealCLIOwnTurn(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.cfg.Env["IS_SANDBOX"] = "1"
	p := r.start(t, agentproc.StartOptions{PermissionMode: "bypassPermissions"})
	gate := filepath.Join(r.dir, "gate")
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
	res, evs := mustTurnPrefix(t, p, "[[BG:"+bgCommand+"]]", "tool said: Command running in background")
	var started agentproc.TaskStarted
	for _, e := range evs {
		if s, ok := e.(agentproc.TaskStarted); ok {
			started = s
		}
	}
	if !started.Backgrounded || started.TaskID == "" || res.Origin != "" {
		t.Fatalf("task_started %+v, origin %q: want a backgrounded task and a result of ours", started, res.Origin)
	}
	if bg := p.Background(); len(bg) != 1 || bg[0].TaskID != started.TaskID {
		t.Errorf("Background() = %+v, want the running task", bg)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()
	var own *agentproc.Turn
	select {
	case own = <-p.Own():
	case <-ctx.Done():
		t.Fatal("no own turn after the background task ended")
	}
	var note agentproc.TaskNotification
	ores, err := own.Wait(func(e agentproc.Event) {
		if n, ok := e.(agentproc.TaskNotification); ok {
			note = n
		}
	})
	if err != nil || !own.Own() {
		t.Fatalf("own turn: %v (own %v)", err, own.Own())
	}
	if note.TaskID != started.TaskID || note.Status != "completed" {
		t.Errorf("task_notification %+v, want the task completed", note)
	}
	if ores.Origin != agentproc.OriginTaskNotification || ores.Text != "background task: "+note.Summary {
		t.Errorf("own result origin %q text %q", ores.Origin, ores.Text)
	}
	if bg := p.Background(); len(bg) != 0 {
		t.Errorf("Background() = %+v after the end, want none", bg)
	}
	// The next turn of ours is answered on its own.
	mustTurn(t, p, "after", "echo: after")
}

// TestRealCLISteer: Turn.Steer writes a message into the running turn; a
// CommandState started with its uuid says it was taken in, and the turn
// ends with one result that answers both.
func TestRealCLISteer(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.cfg.Env["IS_SANDBOX"] = "1"
	p := r.start(t, agentproc.StartOptions{PermissionMode: "bypassPermissions"})
	gate := filepath.Join(r.dir, "gate")
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()
	tr, err := p.StartTurn(ctx, agentproc.UserMessage{Text: "[[TOOL:while [ ! -f gate ]; do sleep 0.05; done; echo opened]]"})
	if err != nil {
		t.Fatal(err)
	}
	var id string
	states := map[string]bool{}
	for ev := range tr.Events() {
		switch e := ev.(type) {
		case agentproc.TaskStarted:
			if id, err = tr.Steer(ctx, "use the other file"); err != nil {
				t.Fatal(err)
			}
		case agentproc.CommandState:
			if e.UUID == id {
				states[e.State] = true
				if e.State == agentproc.CommandQueued {
					_ = os.WriteFile(gate, nil, 0o600)
				}
			}
		}
	}
	res, err := tr.Result()
	if err != nil {
		t.Fatal(err)
	}
	if !states[agentproc.CommandQueued] || !states[agentproc.CommandStarted] {
		t.Errorf("command states %v, want queued and started", states)
	}
	if res.Text != "tool said: opened\nand you said: use the other file" {
		t.Errorf("result %q, want the message taken in", res.Text)
	}
	mustTurn(t, p, "after", "echo: after")
}

// mustTurnPrefix runs a turn that must succeed with a reply starting with
// want.
func mustTurnPrefix(t testing.TB, p *agentproc.Process, text, want string) (*agentproc.Result, []agentproc.Event) {
	t.Helper()
	res, evs, err := turn(t, p, text)
	if err != nil || res == nil || res.IsError || !strings.HasPrefix(res.Text, want) {
		t.Fatalf("turn %q: %+v, %v; want a reply starting %q", text, res, err, want)
	}
	return res, evs
}

// TestRealCLIStopTask: stop_task ends a background task; the CLI reports
// it (task_updated, task_notification with status killed or stopped) and
// the task's list empties.
func TestRealCLIStopTask(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.cfg.Env["IS_SANDBOX"] = "1"
	p := r.start(t, agentproc.StartOptions{PermissionMode: "bypassPermissions"})
	mustTurnPrefix(t, p, "[[BG:sleep 600]]", "tool said: Command running in background")
	bg := p.Background()
	if len(bg) != 1 {
		t.Fatalf("Background() = %+v, want one task", bg)
	}
	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()
	if err := p.StopTask(ctx, bg[0].TaskID); err != nil {
		t.Fatal(err)
	}
	if left := p.Background(); len(left) != 0 {
		t.Errorf("Background() = %+v once stop_task answered, want none", left)
	}
	var evs []agentproc.Event
	noted := func() bool {
		for _, ev := range evs {
			if _, ok := ev.(agentproc.TaskNotification); ok {
				return true
			}
		}
		return false
	}
	for !noted() {
		select {
		case ev := <-p.Events():
			evs = append(evs, ev)
			t.Logf("after stop_task: %#v", ev)
		case own := <-p.Own():
			res, err := own.Wait(func(ev agentproc.Event) { evs = append(evs, ev); t.Logf("own turn: %#v", ev) })
			t.Logf("own turn after stop_task: %+v %v", res, err)
		case <-ctx.Done():
			t.Fatalf("the task did not end after stop_task; events %#v", evs)
		}
	}
	var note agentproc.TaskNotification
	for _, ev := range evs {
		if n, ok := ev.(agentproc.TaskNotification); ok {
			note = n
		}
	}
	if note.TaskID != bg[0].TaskID || note.Status == "completed" || note.Status == "" {
		t.Errorf("task_notification %+v, want the task ended otherwise than completed", note)
	}
	if len(p.Background()) != 0 {
		t.Errorf("Background() = %+v after stop_task, want none", p.Background())
	}
}
