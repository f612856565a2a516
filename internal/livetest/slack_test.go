package livetest

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/platform/slack"
)

// slackSetup is a setup serving the Slack adapter against a fake Slack.
type slackSetup struct {
	*setup
	f *fakeslack.Server
}

func startSlack(t testing.TB, o options, mod func(*slack.Config)) *slackSetup {
	t.Helper()
	f := fakeslack.New(t)
	f.SetWaitLimit(waitLimit)
	cfg := slack.Config{Name: "slack", BotToken: fakeslack.BotToken, AppToken: fakeslack.AppToken, APIURL: f.APIURL(),
		ReconnectMin: time.Millisecond, ReconnectMax: 10 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	a, err := slack.New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s := &slackSetup{setup: start(t, a, o), f: f}
	f.WaitConn(t, 1)
	return s
}

// fast lets the adapter edit as often as the test likes.
func fast(c *slack.Config) {
	c.EditsPerMinute, c.EditBurst, c.EditInterval = 60000, 100, time.Millisecond
}

// say posts text as U1 at the top of channel C1; its ts is the thread.
func (s *slackSetup) say(t testing.TB, ts, text string) {
	t.Helper()
	s.f.Deliver(t, fakeslack.MsgEvent("C1", ts, "U1", text, nil))
}

// inThread reports the bot's messages in thread ts, deleted ones left out.
func (s *slackSetup) inThread(ts string) []fakeslack.Message {
	var out []fakeslack.Message
	for _, m := range s.f.Posts() {
		if m.ThreadTS == ts && !m.Deleted {
			out = append(out, m)
		}
	}
	return out
}

var ctxLine = regexp.MustCompile(`\n\[ctx: \d+%\]$`)

// A slow answer shows in the thread while it is written, in one message
// edited in place, and ends as exactly the reply with its context line.
func TestRealCLISlackStreamsTheReply(t *testing.T) {
	s := startSlack(t, options{}, fast)
	const ts = "1700000100.000100"
	s.say(t, ts, "tell me slowly [[STREAM:6:3s]]")
	var whole strings.Builder
	for i := 1; i <= 6; i++ {
		whole.WriteString(fakeapi.StreamChunk(i, 6))
	}
	first := s.f.WaitPost(t, "the first chunk, before the answer is done", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "chunk 1 of 6") && !strings.Contains(m.Text, "chunk 6 of 6")
	})
	final := s.f.WaitMessage(t, "C1", first.TS, "the final text", func(m fakeslack.Message) bool {
		return ctxLine.MatchString(m.Text)
	})
	if got := ctxLine.ReplaceAllString(final.Text, ""); got != strings.TrimSpace(whole.String()) {
		t.Errorf("final text %q, want exactly the reply %q", got, strings.TrimSpace(whole.String()))
	}
	if len(final.Edits) < 2 {
		t.Errorf("%d edits: the reply was not shown as it was written", len(final.Edits))
	}
	for _, m := range s.inThread(ts) {
		if m.TS != first.TS && strings.Contains(m.Text, "chunk") {
			t.Errorf("the reply is in a second message too: %q", m.Text)
		}
	}
}

// Quiet shows no reply before it is done, and no status line.
func TestRealCLISlackQuietPostsTheReplyOnce(t *testing.T) {
	s := startSlack(t, options{progress: "quiet"}, fast)
	const ts = "1700000101.000100"
	for i, prompt := range []string{"tell me [[STREAM:3:1s]]", "run it [[TOOL:echo hi]]"} {
		thread := fmt.Sprintf("%s%d", ts, i)
		s.say(t, thread, prompt)
		reply := s.f.WaitPost(t, "the reply", func(m fakeslack.Message) bool {
			return m.ThreadTS == thread && ctxLine.MatchString(m.Text)
		})
		if msgs := s.inThread(thread); len(msgs) != 1 || len(reply.Edits) != 0 {
			t.Errorf("%s: quiet posted %d messages (the reply edited %d times), want the reply alone, once", prompt, len(msgs), len(reply.Edits))
		}
	}
}

// A question's options are buttons; a press answers it, the CLI hands the
// answer to the model as the tool's result, and the prompt says who
// answered.
func TestRealCLISlackQuestionButtons(t *testing.T) {
	s := startSlack(t, options{}, fast)
	const ts = "1700000102.000100"
	s.say(t, ts, "pick one [[ASK]]")
	prompt := s.f.WaitPost(t, "the question", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Blocks, "Which color should the button be?")
	})
	var blue fakeslack.Button
	for _, b := range prompt.Buttons() {
		if b.Text == "Blue" {
			blue = b
		}
	}
	if blue.ActionID == "" {
		t.Fatalf("no Blue button: %+v", prompt.Buttons())
	}
	s.f.WaitAck(t, s.f.PressIn(t, prompt, blue.BlockID, blue.ActionID, "U1"))
	s.f.WaitPost(t, "the reply after the answer", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "tool said:") && ctxLine.MatchString(m.Text)
	})
	if !toolResultHas(s.api, `"Which color should the button be?"="Blue"`) {
		t.Errorf("the model did not get the answer: %q", toolResults(s.api))
	}
	s.f.WaitMessage(t, "C1", prompt.TS, "who answered, without buttons", func(m fakeslack.Message) bool {
		return len(m.Buttons()) == 0 && strings.Contains(m.Blocks, "Answered by")
	})
}

// A reply in the thread is a free-text answer.
func TestRealCLISlackQuestionFreeText(t *testing.T) {
	s := startSlack(t, options{}, fast)
	const ts = "1700000103.000100"
	s.say(t, ts, "pick one [[ASK]]")
	s.f.WaitPost(t, "the question", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Blocks, "Which color should the button be?")
	})
	s.f.Deliver(t, fakeslack.MsgEvent("C1", "1700000103.000200", "U1", "teal, please", map[string]any{"thread_ts": ts}))
	s.f.WaitPost(t, "the reply after the answer", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "tool said:")
	})
	if !toolResultHas(s.api, `The user answered: "Which color should the button be?"="teal, please"`) {
		t.Errorf("the model did not get the free-text answer: %q", toolResults(s.api))
	}
}

// In plan mode the plan is shown whole with its choices; approving it into
// acceptEdits lets the next edit run without asking, and the CLI wrote the
// file.
func TestRealCLISlackPlanApprovedIntoAcceptEdits(t *testing.T) {
	s := startSlack(t, options{mode: "plan"}, fast)
	const ts = "1700000104.000100"
	s.say(t, ts, "plan it [[PLAN]]")
	prompt := s.f.WaitPost(t, "the plan", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && len(m.Buttons()) == 3
	})
	for _, step := range []string{"Read the code.", "Write the fix.", "Run the tests."} {
		if !strings.Contains(prompt.Blocks, step) {
			t.Errorf("the plan is not shown whole: %s lacks %q", prompt.Blocks, step)
		}
	}
	s.f.WaitAck(t, s.f.Press(t, prompt, "cc_plan_accept_edits", "U1"))
	s.f.WaitPost(t, "the reply after the approval", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "tool said:") && ctxLine.MatchString(m.Text)
	})
	if !toolResultHas(s.api, "User has approved your plan") {
		t.Errorf("the model was not told the plan was approved: %q", toolResults(s.api))
	}
	// The same thread goes on in acceptEdits: the Write runs without a
	// prompt.
	s.f.Deliver(t, fakeslack.MsgEvent("C1", "1700000104.000300", "U1", "write it [[WRITE:made.txt:hello]]", map[string]any{"thread_ts": ts}))
	s.f.Wait(t, "the file written without a prompt", func() bool {
		_, err := os.Stat(filepath.Join(s.ws, "made.txt"))
		return err == nil
	})
}

// Keep planning with feedback: the model gets the user's words.
func TestRealCLISlackPlanKeepPlanning(t *testing.T) {
	s := startSlack(t, options{mode: "plan"}, fast)
	const ts = "1700000105.000100"
	s.say(t, ts, "plan it [[PLAN]]")
	prompt := s.f.WaitPost(t, "the plan", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && len(m.Buttons()) == 3
	})
	s.f.WaitAck(t, s.f.Press(t, prompt, "cc_plan_keep", "U1"))
	s.f.WaitPost(t, "the request for feedback", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "what Claude should change")
	})
	s.f.Deliver(t, fakeslack.MsgEvent("C1", "1700000105.000200", "U1", "also cover the error path", map[string]any{"thread_ts": ts}))
	s.f.WaitPost(t, "the reply", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && ctxLine.MatchString(m.Text)
	})
	if !toolResultHas(s.api, "also cover the error path") {
		t.Errorf("the model did not get the feedback: %q", toolResults(s.api))
	}
}

// Verbose shows the tool log and Claude's todo list in the progress
// message.
func TestRealCLISlackVerboseTodoChecklist(t *testing.T) {
	s := startSlack(t, options{progress: "verbose", env: map[string]string{
		"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1", "CLAUDE_CODE_ENABLE_TASKS": "0"}}, fast)
	const ts = "1700000106.000100"
	s.say(t, ts, "track it [[TODO]]")
	s.f.WaitPost(t, "the reply", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && ctxLine.MatchString(m.Text)
	})
	var board string
	for _, m := range s.inThread(ts) {
		// The progress message, not the reply (which names the todos too).
		if strings.Contains(m.Text, "Todo") && !ctxLine.MatchString(m.Text) {
			board = m.Text
		}
	}
	for _, want := range []string{"Tools", "TodoWrite", "Read the code", "Writing the fix", "Run the tests"} {
		if !strings.Contains(board, want) {
			t.Errorf("the progress message lacks %q:\n%s", want, board)
		}
	}
}

func toolResults(api *fakeapi.Server) []string {
	var out []string
	for _, r := range api.Requests() {
		for _, tr := range r.ToolResults {
			out = append(out, fmt.Sprint(tr))
		}
	}
	return out
}

func toolResultHas(api *fakeapi.Server, sub string) bool {
	for _, r := range toolResults(api) {
		if strings.Contains(r, sub) {
			return true
		}
	}
	return false
}

// Outside plan mode an edit is asked for as usual, and the CLI writes the
// file once it is allowed.
func TestRealCLISlackEditAskedOutsidePlanMode(t *testing.T) {
	s := startSlack(t, options{}, fast)
	const ts = "1700000107.000100"
	s.say(t, ts, "write it [[WRITE:made.txt:hello]]")
	prompt := s.f.WaitPost(t, "the permission prompt", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && len(m.Buttons()) == 3 && strings.Contains(m.Blocks, "made.txt")
	})
	s.f.WaitAck(t, s.f.Press(t, prompt, "cc_perm_allow", "U1"))
	s.f.Wait(t, "the file written", func() bool {
		b, err := os.ReadFile(filepath.Join(s.ws, "made.txt"))
		return err == nil && string(b) == "hello"
	})
}

// In plan mode an edit is refused without asking anyone, and the CLI did
// not write the file.
func TestRealCLISlackPlanModeRefusesEdits(t *testing.T) {
	s := startSlack(t, options{mode: "plan"}, fast)
	const ts = "1700000108.000100"
	s.say(t, ts, "write it [[WRITE:made.txt:hello]]")
	s.f.WaitPost(t, "the reply", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && ctxLine.MatchString(m.Text)
	})
	for _, m := range s.inThread(ts) {
		if len(m.Buttons()) > 0 {
			t.Errorf("a prompt was posted for an edit in plan mode: %s", m.Blocks)
		}
	}
	if _, err := os.Stat(filepath.Join(s.ws, "made.txt")); err == nil {
		t.Error("the file was written in plan mode")
	}
	if !toolResultHas(s.api, "Plan mode is on: no edits until the user approves a plan.") {
		t.Errorf("the model was not told why: %q", toolResults(s.api))
	}
}

// A question that takes several answers is a multi-select menu: the
// choice, then Submit, answers it with the labels, which the CLI joins.
func TestRealCLISlackMultiSelectQuestion(t *testing.T) {
	s := startSlack(t, options{}, fast)
	const ts = "1700000109.000100"
	s.say(t, ts, `pick some [[ASK:[{"question":"Which features?","header":"Features","multiSelect":true,`+
		`"options":[{"label":"Auth","description":"login"},{"label":"Export","description":"CSV"},{"label":"Search","description":"full text"}]}]]]`)
	prompt := s.f.WaitPost(t, "the question", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && len(m.Menus()) == 1
	})
	menu := prompt.Menus()[0]
	s.f.WaitAck(t, s.f.Choose(t, prompt, menu.BlockID, menu.ActionID, "U1", "0", "2"))
	var submit fakeslack.Button
	for _, b := range prompt.Buttons() {
		if b.Text == "Submit" {
			submit = b
		}
	}
	if submit.ActionID == "" {
		t.Fatalf("no Submit button: %+v", prompt.Buttons())
	}
	s.f.WaitAck(t, s.f.PressIn(t, prompt, submit.BlockID, submit.ActionID, "U1"))
	s.f.WaitPost(t, "the reply after the answer", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "tool said:")
	})
	if !toolResultHas(s.api, `"Which features?"="Auth,Search"`) {
		t.Errorf("the model did not get both answers: %q", toolResults(s.api))
	}
}

// Thinking is never shown: not while the reply streams, not in the final
// text.
func TestRealCLISlackThinkingNeverShown(t *testing.T) {
	s := startSlack(t, options{progress: "verbose"}, fast)
	const ts = "1700000110.000100"
	s.say(t, ts, "think first [[THINK:a private chain of thought]] [[STREAM:4:1s]]")
	s.f.WaitPost(t, "the reply", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && ctxLine.MatchString(m.Text)
	})
	for _, m := range s.f.Posts() {
		texts := []string{m.Text, m.Blocks}
		for _, e := range m.Edits {
			texts = append(texts, e.Text, e.Blocks)
		}
		for _, text := range texts {
			if strings.Contains(text, "private chain of thought") {
				t.Fatalf("thinking was shown: %q", text)
			}
		}
	}
}
