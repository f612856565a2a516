package render

import "strings"

// What Claude does on its own between messages: the answer of a turn the
// CLI ran by itself after a background task ended, and the tasks still
// running.

// OwnTurnReply is the reply of a turn Claude ran by itself: what ended
// (each background task's summary), then Claude's answer. failed is the
// error text when the turn ended without one.
func OwnTurnReply(summaries []string, answer, failed string) string {
	var b strings.Builder
	for _, s := range summaries {
		b.WriteString("⚙️ " + s + "\n")
	}
	if len(summaries) == 0 {
		b.WriteString("⚙️ Claude went on by itself:\n")
	}
	switch {
	case strings.TrimSpace(answer) != "":
		b.WriteString("\n" + answer)
	case failed != "":
		b.WriteString("\n⚠️ " + failed)
	}
	return strings.TrimRight(b.String(), "\n")
}

// BackgroundRunning lists the background tasks running now, for !status
// and the notices that say what keeps running; "" when none.
func BackgroundRunning(descriptions []string) string {
	if len(descriptions) == 0 {
		return ""
	}
	return "Background tasks running: " + strings.Join(descriptions, "; ")
}

// ReapedWithBackground tells the thread that its idle Claude was closed to
// free a slot for another conversation while background tasks ran: they
// were stopped with it.
func ReapedWithBackground(descriptions []string) string {
	return "Another conversation needed this one's agent slot: Claude was closed, and its background tasks stopped with it (" +
		strings.Join(descriptions, "; ") + ")."
}

// BackgroundStopped says which background tasks a "!stop all" stopped and
// which it could not; "" when there were none.
func BackgroundStopped(stopped, failed []string) string {
	var parts []string
	if len(stopped) > 0 {
		parts = append(parts, "Stopped the background tasks: "+strings.Join(stopped, "; ")+".")
	}
	if len(failed) > 0 {
		parts = append(parts, "Could not stop: "+strings.Join(failed, "; ")+".")
	}
	return strings.Join(parts, " ")
}

// OwnReplyAgain heads a reply of Claude's own that was being posted when
// cc-connect stopped, posted again where the platform cannot tell whether
// it landed.
const OwnReplyAgain = "cc-connect restarted while Claude's own reply below was being posted; in case it did not arrive, here it is again."

// BackgroundEnded replaces a running turn's status message that showed
// only its background tasks, once they all ended.
const BackgroundEnded = "The background tasks ended."
