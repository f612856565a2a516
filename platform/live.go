package platform

import (
	"context"
	"time"
)

// What a turn shows while it runs, beyond the reply: the reply as it is
// written (ReplyEditor), Claude's questions with their options
// (QuestionAsker), a plan to approve (Prompter with Choices), and what a
// platform can do at all (Capabilities).

// Capabilities says what a platform can do and within which limits. Each
// adapter returns one (Capable); the engine reads it to decide how to show
// a turn, and tests read it instead of copying a platform's numbers. What
// an optional interface says (Edits, Reacts, Buttons, …) is filled in by
// Abilities, so that the two cannot disagree.
type Capabilities struct {
	// MessageLimit is how many runes of Markdown one message shows whole:
	// what the engine renders into a single message (a progress log, a
	// checklist) stays under it. Longer text goes through Send, which
	// splits it.
	MessageLimit int
	// EditRate is the pacing the adapter keeps for every edit, within its
	// platform's limits.
	EditRate EditRate
	// EditInterval is the least time between two edits of one message
	// that the engine aims for. The adapter's own pacing (EditRate) keeps
	// the platform's limits whatever the engine asks (per workspace,
	// channel or chat, shared by every conversation there), skipping
	// texts a newer one replaced while it waited; this keeps one
	// conversation from spending that shared budget on states nobody
	// reads.
	EditInterval time.Duration
	// MultiSelect says a multi-select question gets a select menu
	// (ChoiceAnswer or ChoiceSelect with several options). Without it, it
	// shows a toggle per option and a Done button (ChoiceToggle,
	// ChoiceSubmit).
	MultiSelect bool
	// OptionLabelLimit is how many runes of an option's label its button
	// shows; longer labels are cut by the adapter (the whole option is in
	// the prompt's text).
	OptionLabelLimit int

	// What the adapter can do, as its optional interfaces say (Abilities).

	// Edits says posted messages can be edited in place (ReplyEditor,
	// Editor): replies are then streamed as they are written and progress
	// is shown in one message.
	Edits bool
	// Deletes says posted messages can be deleted (Deleter).
	Deletes bool
	// Reacts says messages take emoji reactions (Reactor).
	Reacts bool
	// Buttons says prompts get buttons (Prompter, QuestionAsker); without
	// them they are text, answered with commands or a reply.
	Buttons bool
	// Threads says a conversation can be started as a thread under a
	// posted message (Threader).
	Threads bool
	// History says a conversation's earlier messages can be read back
	// (HistoryReader).
	History bool
	// TagsReplies says each part of a reply is tagged so that the
	// platform, or the adapter, knows it again after a restart (a Replier
	// that is no PartRecorder).
	TagsReplies bool
	// RecordsParts says the engine must write down each part of a reply
	// as it lands (PartRecorder).
	RecordsParts bool
	// Typing says the platform shows a typing indicator (Typer).
	Typing bool
	// Files says files can be posted (FileSender).
	Files bool
}

// EditRate is how fast an adapter edits posted messages: at most
// PerMinute edits in any minute across the scope its platform counts
// (Slack: the workspace), Burst of them back to back, and Interval
// between two edits in one channel or chat.
type EditRate struct {
	PerMinute int // 0: the platform counts no budget per minute
	Burst     int
	Interval  time.Duration
}

// The limits of an adapter that names none, and the defaults the adapters
// start from.
const (
	// DefaultMessageLimit is a message every platform shows whole.
	DefaultMessageLimit = 1900
	// DefaultEditInterval is the least time between two edits in one
	// channel when the config names none (edit_interval).
	DefaultEditInterval = time.Second
)

// Capable is implemented by adapters that describe their platform.
type Capable interface {
	Capabilities() Capabilities
}

// CapabilitiesOf returns a's Capabilities, or for an adapter that gives
// none, what its optional interfaces say (Abilities) within the default
// limits.
func CapabilitiesOf(a Adapter) Capabilities {
	if c, ok := a.(Capable); ok {
		return c.Capabilities()
	}
	c := Abilities(a)
	c.MessageLimit = DefaultMessageLimit
	c.EditInterval = DefaultEditInterval
	c.EditRate = EditRate{Interval: DefaultEditInterval}
	return c
}

// Abilities is what a's optional interfaces say it can do, with no limits
// set: an adapter's Capabilities starts from it.
func Abilities(a Adapter) Capabilities {
	_, edits := a.(ReplyEditor)
	_, deletes := a.(Deleter)
	_, reacts := a.(Reactor)
	_, buttons := a.(Prompter)
	_, threads := a.(Threader)
	_, history := a.(HistoryReader)
	_, replies := a.(Replier)
	_, records := a.(PartRecorder)
	_, typing := a.(Typer)
	_, files := a.(FileSender)
	return Capabilities{Edits: edits, Deletes: deletes, Reacts: reacts, Buttons: buttons, Threads: threads,
		History: history, TagsReplies: replies && !records, RecordsParts: records, Typing: typing, Files: files}
}

// ReplyEditor is implemented by platforms that can show a reply while it is
// written. EditReply makes msgs (the messages the reply holds so far, in
// order; none at first) show text exactly as Send would post it: split the
// same way, the first parts edited into msgs (a part a message already
// shows is not sent again), the rest posted after the last. It returns the
// messages that hold text now, in order. Messages of msgs beyond the parts
// text needs are left as they are: the caller deletes them (Deleter) or
// makes them say something. Edits are paced as Edit's are; an edit that a
// newer one of the same message replaced while it waited returns at once.
// On an error, the returned messages are those known to hold a part.
// Calls for the same messages must not overlap (the caller's one
// goroutine makes them).
type ReplyEditor interface {
	EditReply(ctx context.Context, to Target, msgs []Target, text string) ([]Target, error)
}

// Deleter is implemented by platforms that can delete the bot's own posts.
type Deleter interface {
	Delete(ctx context.Context, msg Target) error
}

// Choices on prompts that are not permission requests. A question's
// presses carry Action.Question and Action.Options; a plan's, one of the
// plan choices.
const (
	// ChoiceAnswer: Action.Options answer question Action.Question (one
	// option from a button, any number from a multi-select menu).
	ChoiceAnswer Choice = "answer"
	// ChoiceSelect: Action.Options are now the chosen options of a
	// multi-select question (a menu that reports every change);
	// ChoiceSubmit answers with them.
	ChoiceSelect Choice = "select"
	// ChoiceToggle: the option in Action.Options of a multi-select
	// question is chosen, or no longer (platforms without select menus).
	ChoiceToggle Choice = "toggle"
	// ChoiceSubmit: the options chosen so far answer the question.
	ChoiceSubmit Choice = "submit"
	// ChoiceDismiss: the questions are dismissed without an answer.
	ChoiceDismiss Choice = "dismiss"

	// ChoicePlanDefault approves a plan and goes on asking before edits.
	ChoicePlanDefault Choice = "plan_default"
	// ChoicePlanAcceptEdits approves a plan and lets Claude edit files
	// without asking.
	ChoicePlanAcceptEdits Choice = "plan_accept_edits"
	// ChoicePlanKeep keeps planning, with the presser's feedback.
	ChoicePlanKeep Choice = "plan_keep"

	// ChoiceRevert undoes the file changes of the turn a summary of what
	// it changed shows (its RequestID names the turn).
	ChoiceRevert Choice = "revert"
)

// PromptChoice is one button of a prompt with choices of its own
// (PermissionPrompt.Choices).
type PromptChoice struct {
	Choice Choice
	Label  string // plain text
	// Style is "primary", "danger" or "" for the platform's plain button.
	Style string
}

// QuestionOption is one option of a question: Label is what its button
// says (plain text, cut to Capabilities.OptionLabelLimit).
type QuestionOption struct {
	Label string
}

// Question is one of Claude's questions as the chat shows it.
type Question struct {
	// Text is everything shown for the question, in Markdown: its header,
	// the question, the options with their descriptions, and once
	// answered, the answer and who gave it. Claude's words in it are
	// already made safe to show (no mentions, no control characters).
	Text        string
	Options     []QuestionOption
	MultiSelect bool
	// Selected are the options chosen so far (ChoiceToggle, ChoiceSelect),
	// shown as such on their buttons or menu.
	Selected OptionSet
	// Done says the question is answered: it shows no buttons.
	Done bool
}

// QuestionPrompt is the questions of one request (AskUserQuestion asks one
// to four at once), shown in one message with buttons under each open
// question, and a Dismiss button while any is open.
type QuestionPrompt struct {
	RequestID string
	// Intro is Markdown shown above the questions (how to answer).
	Intro     string
	Questions []Question
	// Outcome, when set, closes the prompt: no buttons at all, and the
	// outcome (answered, dismissed, timed out) shown under the questions.
	Outcome string
}

// QuestionAsker is implemented by platforms with buttons that can show
// Claude's questions. Presses come back through Handler.HandleAction with
// the prompt's RequestID and ChoiceAnswer, ChoiceToggle, ChoiceSubmit or
// ChoiceDismiss. Without it the engine posts the questions as a numbered
// list, answered by a reply.
type QuestionAsker interface {
	AskQuestions(ctx context.Context, to Target, p QuestionPrompt) (Target, error)
	// UpdateQuestions redraws a posted prompt with p's state.
	UpdateQuestions(ctx context.Context, prompt Target, p QuestionPrompt) error
}

// OptionSet is a set of a question's options by index (0 to 31), a value
// so that an Action stays comparable.
type OptionSet uint32

// Options returns the set of the given indexes; those out of range are
// left out.
func Options(idx ...int) OptionSet {
	var s OptionSet
	for _, i := range idx {
		s = s.With(i)
	}
	return s
}

// With returns s with option i.
func (s OptionSet) With(i int) OptionSet {
	if i < 0 || i > 31 {
		return s
	}
	return s | 1<<uint(i)
}

// Toggle returns s with option i added, or removed when it was in s.
func (s OptionSet) Toggle(i int) OptionSet {
	if i < 0 || i > 31 {
		return s
	}
	return s ^ 1<<uint(i)
}

// Has reports whether option i is in s.
func (s OptionSet) Has(i int) bool { return i >= 0 && i <= 31 && s&(1<<uint(i)) != 0 }

// List returns the options of s in order.
func (s OptionSet) List() []int {
	var out []int
	for i := range 32 {
		if s.Has(i) {
			out = append(out, i)
		}
	}
	return out
}

// StatusLiner is implemented by platforms that show a running turn's
// status in a place of its own instead of a message (the terminal's status
// line, redrawn in place under what was printed). The engine then hands it
// each status (what Claude does now, the tool in use) instead of posting
// and editing a status message; "" clears it. A StatusLiner may show
// nothing at all where it cannot draw (a terminal whose output is piped).
type StatusLiner interface {
	ShowStatus(ctx context.Context, to Target, text string) error
}
