package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/platform"
)

// What a turn changed: the summary posted after a turn that changed files,
// and the replies of !diff and !revert.

// TurnChanges is what a turn changed, as the summary shows it.
type TurnChanges struct {
	Files          []string // relative to the workspace where inside it
	Added, Removed int      // lines
	Buttons        bool     // the summary carries a Revert button
}

// maxSummaryFiles is how many files a summary names before "and N more".
const maxSummaryFiles = 10

// ChangesSummary is the compact summary of what a turn changed.
func ChangesSummary(c TurnChanges) string {
	var b strings.Builder
	b.WriteString("📝 This turn changed " + changed(c))
	b.WriteString("\n`!diff` posts the diff")
	if c.Buttons {
		b.WriteString("; approvers can undo it with the button or `!revert`.")
	} else {
		b.WriteString("; approvers can undo it with `!revert`.")
	}
	return b.String()
}

// changed is the compact list of what a turn changed: "2 files (+4 −1):
// `a`, `b`", the summary's and !status's.
func changed(c TurnChanges) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (+%d −%d): ", plural(len(c.Files), "file"), c.Added, c.Removed)
	shown := c.Files
	if len(shown) > maxSummaryFiles {
		shown = shown[:maxSummaryFiles]
	}
	b.WriteString(quoteList(shown))
	if more := len(c.Files) - len(shown); more > 0 {
		fmt.Fprintf(&b, " and %d more", more)
	}
	return b.String()
}

// RevertChoices is the summary's button.
func RevertChoices() []platform.PromptChoice {
	return []platform.PromptChoice{{Choice: platform.ChoiceRevert, Label: "Revert this turn", Style: "danger"}}
}

// Reverted tells the thread what a revert restored: files back to what
// they were before the turn, putBack and takenOut lines.
func Reverted(user string, files []string, putBack, takenOut int) string {
	return fmt.Sprintf("↩️ %s reverted the last turn: %s back to what %s before it (%s put back, %d taken out).",
		user, quoteList(files), wasWere(len(files)), plural(putBack, "line"), takenOut)
}

// RevertedOutcome is what the summary's button turns into once pressed.
func RevertedOutcome(user string) string { return "Reverted by " + user }

// Replies of !revert that refuse, and of !diff.
const (
	RevertNothing = "There is no turn to revert: none has run in this conversation yet, or its session was changed since (`!new`, `!resume`)."
	RevertNoFiles = "The last turn changed no files: there is nothing to revert. Only the last turn can be reverted."
	RevertBusy    = "A turn is running: revert once it has ended (only the last turn can be reverted)."
	RevertNotLast = "That turn is not the last one: only the last turn can be reverted, since undoing an earlier one would undo the turns after it too."
	RevertOwnTurn = "Claude has run a turn of its own since the last turn (after a background task): reverting would undo that too, so it is refused."
	RevertOff     = "File checkpoints are off for this binding (`checkpoints = false`): turns cannot be reverted here."
	DiffNothing   = "The last turn changed no files."
	DiffNotKept   = "The diff of the last turn was not kept (the log says why); its summary above says which files it changed."
	DiffEmpty     = "Claude's tools reported no patch for the last turn's changes, so there is no diff to show; its summary above says which files it changed."
)

// RevertAgain refuses a second revert of the same turn.
func RevertAgain(by string, at time.Time) string {
	return fmt.Sprintf("The last turn was already reverted (by %s, %s): it cannot be reverted twice.", by, at.UTC().Format("2006-01-02 15:04 UTC"))
}

// RevertFailed says the CLI refused or failed the rewind.
func RevertFailed(why string) string {
	return "Reverting the last turn failed: " + why + ". Nothing was changed by cc-connect."
}

// RevertNotApprover refuses !revert (or its button) to someone who may not
// approve.
func RevertNotApprover(user string) string {
	return user + " may not revert turns here: only the binding's approvers may."
}

// DiffComment goes with the diff's file.
func DiffComment(files int, added, removed int) string {
	return fmt.Sprintf("The diff of the last turn: %s, +%d −%d.", plural(files, "file"), added, removed)
}

// RevertNote is what Claude is told with the next message after a revert,
// so that it does not take the files for what it left them.
func RevertNote(files []string) string {
	return "[The user reverted the file changes of your last turn since then: " + strings.Join(files, ", ") +
		" are back to what they were before it. Read them again before relying on their contents.]"
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func wasWere(n int) string {
	if n == 1 {
		return "it was"
	}
	return "they were"
}

func quoteList(files []string) string {
	q := make([]string, len(files))
	for i, f := range files {
		q[i] = "`" + strings.ReplaceAll(f, "`", "'") + "`"
	}
	return strings.Join(q, ", ")
}
