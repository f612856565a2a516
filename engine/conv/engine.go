package conv

import (
	"errors"
)

// ErrStopped means work was not started because the engine is shutting
// down; the user is told to send the message again later.
var ErrStopped = errors.New("engine stopped")

func joinPrompt(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n\n" + b
}

// Kill points: where the engine stops when a test kills it (stopAt), to
// check what a restart makes of the files a kill there leaves.
const (
	PointClaimed           = "accept: claimed"                         // the id's claim is held, nothing written
	PointAccepted          = "accept: journaled"                       // the entry is on disk, not acknowledged
	PointStarted           = "turn: start marked"                      // the start is in the journal, the message not sent
	PointReplied           = "turn: replied, not acknowledged"         // the reply is posted, the entry not acked
	PointStreamed          = "turn: stream posted"                     // a streamed reply's message is posted and journaled
	PointSettled           = "turn: settled, reply not posted"         // a cluster's event is settled, its reply not posted
	PointSettling          = "turn: reply marked, not settled"         // a cluster's event's reply is marked, the settle not sent
	PointSteered           = "turn: message steered in"                // a follow-up is journaled and written into the running turn
	PointOwnKept           = "own turn: journaled, not posted"         // the reply of a turn the CLI ran by itself is on disk, not posted
	PointOwnSent           = "own turn: posted, not acknowledged"      // that reply is posted, its entry not acked
	PointReplicated        = "turn: reply stored, not settled"         // a cluster's event's reply is stored for the next holder, the settle not sent
	PointSettledUnrecorded = "turn: settled, not recorded as answered" // a cluster's event is settled, not recorded as answered
)

// ErrKilled is what work stopped at a kill point returns.
var ErrKilled = errors.New("stopped at a kill point")

// killedAt reports whether a test stops the engine at point.
func (e *Set) killedAt(point string) bool {
	return e.stopAt != nil && e.stopAt(point)
}
