package agentproc

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDecodeBackgroundFixtures reads what the real CLI wrote (captured by
// TestRealCLICaptureBackgroundTask and TestRealCLICaptureSteer) into the
// task, background and command events, and the second result's origin.
func TestDecodeBackgroundFixtures(t *testing.T) {
	tests := []struct {
		fixture string
		check   func(t *testing.T, evs []Event)
	}{
		{"background_task", func(t *testing.T, evs []Event) {
			var started TaskStarted
			var updated TaskUpdated
			var note TaskNotification
			var lists []int
			var origins []string
			for _, e := range evs {
				switch e := e.(type) {
				case TaskStarted:
					started = e
				case TaskUpdated:
					updated = e
				case TaskNotification:
					note = e
				case BackgroundTasks:
					lists = append(lists, len(e.Tasks))
				case *Result:
					origins = append(origins, e.Origin)
				}
			}
			if !started.Backgrounded || started.TaskType != "local_bash" || started.TaskID == "" {
				t.Errorf("task started %+v", started)
			}
			if updated.TaskID != started.TaskID || updated.Status != "completed" {
				t.Errorf("task updated %+v", updated)
			}
			if note.TaskID != started.TaskID || note.Status != "completed" || note.Summary == "" || note.OutputFile == "" {
				t.Errorf("task notification %+v", note)
			}
			if len(lists) != 2 || lists[0] != 1 || lists[1] != 0 {
				t.Errorf("background lists of %v tasks, want 1 then 0", lists)
			}
			if len(origins) != 2 || origins[0] != "" || origins[1] != OriginTaskNotification {
				t.Errorf("result origins %q, want ours then the task-notification's", origins)
			}
		}},
		{"steer", func(t *testing.T, evs []Event) {
			var states []string
			for _, e := range evs {
				if c, ok := e.(CommandState); ok && c.UUID == "22222222-3333-4444-8555-666666666666" {
					states = append(states, c.State)
				}
			}
			if len(states) != 3 || states[0] != CommandQueued || states[1] != CommandStarted || states[2] != CommandCompleted {
				t.Errorf("the steered message's states %v", states)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", "captures", tt.fixture, "stdout.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var d decoder
			var evs []Event
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, MaxLineBytes)
			for sc.Scan() {
				evs = append(evs, d.decodeLine(sc.Bytes()).events...)
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			tt.check(t, evs)
		})
	}
}

// TestOwnTurnFake: with the fake CLI, a background task that ends after
// its turn's result brings an own turn on Own, whose first events are the
// task's end and whose result is of origin task-notification; the next turn of ours is answered alone.
func TestOwnTurnFake(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	gate := filepath.Join(e.dir, "gate")
	res, c := mustTurn(t, p, "[[BG:"+gate+"]]")
	if res.Origin != "" || len(p.Background()) != 1 {
		t.Fatalf("result origin %q, background %v: want ours and one task", res.Origin, p.Background())
	}
	var started TaskStarted
	for _, ev := range c.evs {
		if s, ok := ev.(TaskStarted); ok {
			started = s
		}
	}
	if !p.BackgroundBusy() {
		t.Error("BackgroundBusy false while a task runs")
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var own *Turn
	select {
	case own = <-p.Own():
	case <-testCtx(t).Done():
		t.Fatal("no own turn")
	}
	var oc collect
	ores, err := own.Wait(oc.on)
	if err != nil {
		t.Fatal(err)
	}
	if len(oc.evs) == 0 {
		t.Fatal("own turn without events")
	}
	if n, ok := oc.evs[0].(TaskUpdated); !ok || n.TaskID != started.TaskID {
		t.Errorf("own turn's first event %#v, want the task's update", oc.evs[0])
	}
	if ores.Origin != OriginTaskNotification || !strings.HasPrefix(ores.Text, "background task: ") {
		t.Errorf("own result %q origin %q", ores.Text, ores.Origin)
	}
	if len(p.Background()) != 0 || p.BackgroundBusy() {
		t.Errorf("background %v (busy %v) after the own turn, want none", p.Background(), p.BackgroundBusy())
	}
	if res, _ := mustTurn(t, p, "after"); res.Text != "echo: after" {
		t.Errorf("next turn %q", res.Text)
	}
}

// TestSteerFake: a message steered into a turn while its tool runs is
// queued, started and completed (CommandState) and answered in the one
// result.
func TestSteerFake(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	ctx := testCtx(t)
	tr, err := p.StartTurn(ctx, UserMessage{Text: "[[TOOL:touch x]]"})
	if err != nil {
		t.Fatal(err)
	}
	var id, perm string
	var states []string
	for ev := range tr.Events() {
		switch e := ev.(type) {
		case PermissionRequest:
			perm = e.RequestID
			if id, err = tr.Steer(ctx, "use the other file"); err != nil {
				t.Fatal(err)
			}
		case CommandState:
			if e.UUID == id {
				states = append(states, e.State)
				if e.State == CommandQueued {
					if err := p.RespondPermission(ctx, perm, PermissionDecision{Behavior: Allow}); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	res, err := tr.Result()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(states, ",") != "queued,started,completed" {
		t.Errorf("states %v", states)
	}
	if !strings.Contains(res.Text, "use the other file") {
		t.Errorf("result %q, want the steered message read", res.Text)
	}
}
