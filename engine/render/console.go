package render

import "fmt"

// The replies of !console.
const (
	ConsoleOff     = "The console is off here: an admin turns it on with [console] enabled = true (docs/console.md)."
	ConsoleNeedsDM = "This chat cannot send you a direct message: send !console to me in a direct message instead."
	ConsoleFailed  = "Sorry, the console link could not be sent (the log has the details). Try again in a moment."
	// ConsoleNoDirectChat: the platform refused a direct message (a
	// Telegram bot may write only to people who started it).
	ConsoleNoDirectChat = "I could not send you the console link by direct message: I may write to you privately only once you " +
		"have started a direct chat with me (on Telegram, open the bot and press Start; on Discord, allow direct messages " +
		"from this server's members). Then send !console again, here or there."
)

// ConsoleLink is the direct message that carries a sign-in link.
func ConsoleLink(link string) string {
	return fmt.Sprintf("Your sign-in link to the console (it works once, within 5 minutes; do not share it):\n%s", link)
}

// ConsoleSent tells the thread where the link went.
func ConsoleSent(user string) string {
	return fmt.Sprintf("%s: I sent you a sign-in link to the console by direct message.", user)
}
