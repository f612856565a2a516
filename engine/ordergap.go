package engine

import (
	"context"
	"slices"
	"time"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/platform"
)

// Messages missing before the first one after a start. Within one
// instance nothing of a conversation is missing when a message comes: the
// adapter's lanes hand its messages over in the order they came. After a
// restart the dead instance may have taken messages it never journaled,
// and their retries come after newer messages posted to the new one, too
// late to run before them (order.go). So the first message of a known
// thread that an engine takes, within gapWindow of its start, has the
// thread read back once (platform.HistoryReader, the latest gapLookback
// messages before it): the people's messages posted after the thread's
// last one the engine has seen (its anchor: journaled, so in the seen
// ids) are accepted first, oldest first, from the platform's copy and
// under their own ids, so that their retries are duplicates. Without an
// anchor in what was read (the gap is longer, or the seen window has
// passed) nothing is read back: what lies before could be chatter the bot
// never took. A message with files is left to its retry (history names
// files, it cannot fetch them), and so is one of a user who may not use
// the agent here (its retry is refused as before). The normal path pays
// nothing: past gapWindow, or for a conversation read back already, it is
// one comparison and one lookup.

const (
	// gapWindow is how long after its start an engine looks for what a
	// dead instance left unjournaled: Slack retries an event for minutes,
	// not hours.
	gapWindow = 10 * time.Minute
	// gapLookback is how many messages before the first one are read.
	gapLookback = 20
)

// missingBefore returns the messages of m's thread posted before it that
// the engine never journaled and should take first, oldest first; nil on
// the normal path (see above). b is m's binding.
func (e *Engine) missingBefore(ctx context.Context, a platform.Adapter, b binding.Binding, m platform.Message) []platform.Message {
	t := m.Target
	hr, ok := a.(platform.HistoryReader)
	seen := e.convs.Seen()
	if !ok || seen == nil || m.Seq == 0 || t.Thread == "" || t.Thread == t.MessageID || e.now().Sub(e.born) > gapWindow {
		return nil
	}
	key := conv.Key(t)
	if e.gapChecked.has(key) || !e.convs.Has(key) {
		return nil // a thread without a session has its root read back instead (threadroot.go)
	}
	e.gapChecked.add(key)
	ctx, cancel := context.WithTimeout(ctx, rootLookupTimeout)
	defer cancel()
	conv := t
	conv.MessageID = ""
	hist, err := hr.History(ctx, conv, platform.HistoryQuery{Before: t.MessageID, Limit: gapLookback})
	if err != nil {
		e.log.Warn("Reading a thread back for messages missing before a restart failed", "platform", t.Platform,
			"channel", t.Channel, "thread", t.Thread, "session_key", key, "error", err)
		return nil
	}
	var missing []platform.Message
	for i := len(hist) - 1; i >= 0; i-- {
		h := hist[i]
		switch {
		case h.IsBot || h.FromSelf || h.Seq == 0 || h.Seq >= m.Seq:
			continue
		case seen.Has(inbox.SeenKey(t.Platform, h.ID)):
			// The anchor: the newest message of the thread the engine
			// took. What came after it was lost with the dead instance.
			slices.Reverse(missing) // oldest first
			return missing
		case h.Root:
			return nil // reached the root unseen: no anchor
		case len(h.Files) > 0 || !b.Allowed(h.UserID):
			continue
		}
		missing = append(missing, platform.Message{
			ID:        h.ID,
			Target:    platform.Target{Platform: t.Platform, Channel: t.Channel, Thread: t.Thread, MessageID: h.MessageID},
			UserID:    h.UserID,
			UserName:  h.UserName,
			Text:      h.Text,
			Mentioned: h.Mentioned,
			Received:  h.Time,
			Seq:       h.Seq,
		})
	}
	return nil // no anchor in what was read
}
