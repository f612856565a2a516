package platform

// Threader is implemented by platforms where a thread hangs under a posted
// message (Slack: a message's ts is the thread its replies go in). Work
// that starts without a person posts a header and runs in the thread under
// it; without Threader it runs in the channel's own conversation.
type Threader interface {
	// ThreadUnder is the conversation of the thread under posted, a
	// message Send returned.
	ThreadUnder(posted Target) Target
}
