package conv

import (
	"encoding/json"
	"os"
	"strings"

	"github.com/cc-connect/cc-connect/engine/render"
)

// What a running turn keeps to show besides its reply: a plan to approve
// (ExitPlanMode), read from its file when the CLI did not carry it, and
// the tool calls and Claude's todo list (progress = "verbose") as they
// change. render shows them.

// planInput is ExitPlanMode's input (docs/claude-code.md §2).
type planInput struct {
	Plan         string `json:"plan"`
	PlanFilePath string `json:"planFilePath"`
}

// maxPlanFile bounds a plan read from its file.
const maxPlanFile = 256 << 10

// planOf is the plan of an ExitPlanMode request: the CLI's plan text, or
// when the request carries none, its plan file's; "" when neither has one.
func planOf(input json.RawMessage) string {
	var in planInput
	_ = json.Unmarshal(input, &in)
	plan := in.Plan
	if strings.TrimSpace(plan) == "" && in.PlanFilePath != "" {
		if f, err := os.Open(in.PlanFilePath); err == nil {
			buf := make([]byte, maxPlanFile)
			n, _ := f.Read(buf)
			_ = f.Close()
			plan = string(buf[:n])
		}
	}
	return plan
}

// toolLog is a turn's tool calls, one line each (render.ToolLog).
type toolLog struct {
	calls []render.ToolCall
	index map[string]int // tool_use id → calls
}

// start adds a call; summary is its line (render.ToolSummary).
func (l *toolLog) start(id, summary string) {
	if l.index == nil {
		l.index = map[string]int{}
	}
	l.index[id] = len(l.calls)
	l.calls = append(l.calls, render.ToolCall{Summary: summary})
}

// end marks call id done or failed; it reports whether it knew the call.
func (l *toolLog) end(id string, failed bool) bool {
	i, ok := l.index[id]
	if !ok {
		return false
	}
	l.calls[i].State = render.ToolDone
	if failed {
		l.calls[i].State = render.ToolFailed
	}
	return true
}

// checklist is Claude's todo list: TodoWrite's whole list each time, or
// the task tools' items kept from their results (docs/claude-code.md §6).
type checklist struct {
	items []todoItem
}

type todoItem struct {
	id string // the task tools'
	render.TodoItem
}

// fromTodoWrite replaces the list with a TodoWrite call's; it reports
// whether the input was one.
func (c *checklist) fromTodoWrite(input json.RawMessage) bool {
	var in struct {
		Todos []struct {
			Content    string `json:"content"`
			Status     string `json:"status"`
			ActiveForm string `json:"activeForm"`
		} `json:"todos"`
	}
	if json.Unmarshal(input, &in) != nil || in.Todos == nil {
		return false
	}
	c.items = c.items[:0]
	for _, t := range in.Todos {
		c.items = append(c.items, todoItem{TodoItem: render.TodoItem{Text: t.Content, Active: t.ActiveForm, Status: t.Status}})
	}
	return true
}

// fromTaskResult applies a task tool's structured result; it reports
// whether the list changed.
func (c *checklist) fromTaskResult(structured json.RawMessage) bool {
	var r struct {
		Task *struct {
			ID      string `json:"id"`
			Subject string `json:"subject"`
		} `json:"task"`
		TaskID       string `json:"taskId"`
		StatusChange *struct {
			To string `json:"to"`
		} `json:"statusChange"`
		Tasks []struct {
			ID      string `json:"id"`
			Subject string `json:"subject"`
			Status  string `json:"status"`
		} `json:"tasks"`
	}
	if len(structured) == 0 || json.Unmarshal(structured, &r) != nil {
		return false
	}
	switch {
	case r.Tasks != nil:
		c.items = c.items[:0]
		for _, t := range r.Tasks {
			c.items = append(c.items, todoItem{id: t.ID, TodoItem: render.TodoItem{Text: t.Subject, Status: t.Status}})
		}
		return true
	case r.Task != nil && r.Task.ID != "":
		c.items = append(c.items, todoItem{id: r.Task.ID, TodoItem: render.TodoItem{Text: r.Task.Subject, Status: "pending"}})
		return true
	case r.TaskID != "" && r.StatusChange != nil:
		for i := range c.items {
			if c.items[i].id != r.TaskID {
				continue
			}
			if r.StatusChange.To == "deleted" {
				c.items = append(c.items[:i], c.items[i+1:]...)
			} else {
				c.items[i].Status = r.StatusChange.To
			}
			return true
		}
	}
	return false
}

// shown is the list as render shows it.
func (c *checklist) shown() []render.TodoItem {
	out := make([]render.TodoItem, len(c.items))
	for i, it := range c.items {
		out[i] = it.TodoItem
	}
	return out
}
