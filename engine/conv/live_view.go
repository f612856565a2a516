package conv

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/cc-connect/cc-connect/platform"
)

// What a running turn shows besides its reply, as text: a plan to approve
// (ExitPlanMode), the compact log of tool calls and Claude's todo list
// (progress = "verbose"), and the reply while it is written. Pure, except
// that a plan the CLI did not carry is read from its file.

// planInput is ExitPlanMode's input (docs/claude-code.md §2).
type planInput struct {
	Plan         string `json:"plan"`
	PlanFilePath string `json:"planFilePath"`
}

// maxPlanFile bounds a plan read from its file.
const maxPlanFile = 256 << 10

// planText is the plan as the chat shows it, in full: the CLI's plan
// text, or when the request carries none, its plan file.
func planText(input json.RawMessage) string {
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
	if strings.TrimSpace(plan) == "" {
		return "📋 **Claude has a plan** but did not say what it is. Approve to let it start, or keep planning and say what you want to see."
	}
	return "📋 **Claude's plan** — approve it to start, or keep planning with your feedback (reply in the thread):\n\n" + Visible(strings.TrimSpace(plan))
}

// planChoices are a plan's buttons: approve and go on asking before edits,
// approve and accept edits (when the binding allows that mode), or keep
// planning.
func planChoices(acceptEdits bool) []platform.PromptChoice {
	cs := []platform.PromptChoice{{Choice: platform.ChoicePlanDefault, Label: "Approve", Style: "primary"}}
	if acceptEdits {
		cs = append(cs, platform.PromptChoice{Choice: platform.ChoicePlanAcceptEdits, Label: "Approve, accept edits"})
	}
	return append(cs, platform.PromptChoice{Choice: platform.ChoicePlanKeep, Label: "Keep planning"})
}

// toolLog is the compact log of a turn's tool calls: one line each, the
// last maxLogLines shown.
type toolLog struct {
	calls []toolCall
	index map[string]int // tool_use id → calls
}

type toolCall struct {
	summary string
	state   toolState
}

type toolState int

const (
	toolRunning toolState = iota
	toolDone
	toolFailed
)

const maxLogLines = 12

func (l *toolLog) start(id, name string, input json.RawMessage) {
	if l.index == nil {
		l.index = map[string]int{}
	}
	l.index[id] = len(l.calls)
	l.calls = append(l.calls, toolCall{summary: toolSummary(name, input)})
}

// end marks call id done or failed; it reports whether it knew the call.
func (l *toolLog) end(id string, failed bool) bool {
	i, ok := l.index[id]
	if !ok {
		return false
	}
	l.calls[i].state = toolDone
	if failed {
		l.calls[i].state = toolFailed
	}
	return true
}

func (l *toolLog) empty() bool { return len(l.calls) == 0 }

// text is the log as shown, within limit runes.
func (l *toolLog) text(limit int) string {
	var lines []string
	from := max(0, len(l.calls)-maxLogLines)
	if from > 0 {
		lines = append(lines, fmt.Sprintf("_… %d earlier tool calls_", from))
	}
	for _, c := range l.calls[from:] {
		mark := "⏳"
		switch c.state {
		case toolDone:
			mark = "✓"
		case toolFailed:
			mark = "✗"
		}
		lines = append(lines, mark+" "+c.summary)
	}
	return Quote("🔧 **Tools**\n"+strings.Join(lines, "\n"), limit)
}

// checklist is Claude's todo list: TodoWrite's whole list each time, or
// the task tools' items kept from their results (docs/claude-code.md §6).
type checklist struct {
	items []todoItem
}

type todoItem struct {
	id, text, active, status string
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
		c.items = append(c.items, todoItem{text: t.Content, active: t.ActiveForm, status: t.Status})
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
			c.items = append(c.items, todoItem{id: t.ID, text: t.Subject, status: t.Status})
		}
		return true
	case r.Task != nil && r.Task.ID != "":
		c.items = append(c.items, todoItem{id: r.Task.ID, text: r.Task.Subject, status: "pending"})
		return true
	case r.TaskID != "" && r.StatusChange != nil:
		for i := range c.items {
			if c.items[i].id != r.TaskID {
				continue
			}
			if r.StatusChange.To == "deleted" {
				c.items = append(c.items[:i], c.items[i+1:]...)
			} else {
				c.items[i].status = r.StatusChange.To
			}
			return true
		}
	}
	return false
}

func (c *checklist) empty() bool { return len(c.items) == 0 }

// text is the checklist as shown, within limit runes.
func (c *checklist) text(limit int) string {
	lines := []string{"📝 **Todo**"}
	for _, it := range c.items {
		switch it.status {
		case "completed":
			lines = append(lines, "☑ ~"+escapeMD(chatText(it.text, 200))+"~")
		case "in_progress":
			lines = append(lines, "▶ **"+escapeMD(chatText(orDefault(it.active, it.text), 200))+"**")
		default:
			lines = append(lines, "☐ "+escapeMD(chatText(it.text, 200)))
		}
	}
	return Quote(strings.Join(lines, "\n"), limit)
}

// streamingText is a reply while it is written, as posted: a code block
// left open so far is closed (so that a part never breaks one), and a mark
// says more is coming.
func streamingText(s string) string {
	s = strings.TrimRight(s, " \t\n")
	if s == "" {
		return ""
	}
	if fence, open := openFence(s); open {
		s += "\n" + fence
	}
	return s + "\n…"
}

// openFence reports whether s ends inside a fenced code block, and the
// fence that closes it.
func openFence(s string) (string, bool) {
	fence := ""
	for _, line := range strings.Split(s, "\n") {
		t := strings.TrimLeft(line, " ")
		if !strings.HasPrefix(t, "```") && !strings.HasPrefix(t, "~~~") {
			continue
		}
		mark := t[:3]
		n := len(t) - len(strings.TrimLeft(t, mark[:1]))
		switch {
		case fence == "":
			fence = strings.Repeat(mark[:1], n)
		case n >= len(fence) && strings.TrimSpace(t[n:]) == "" && t[0] == fence[0]:
			fence = ""
		}
	}
	return fence, fence != ""
}
