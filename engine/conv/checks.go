package conv

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/platform"
)

// Reading a thread back. Two rules need what the platform holds of a
// thread, and both read it on the conversation's goroutine, when the
// message they concern reaches the head of its FIFO, never on the accept
// path (which journals, acknowledges and returns):
//
//   - A reply in a thread whose root mentions the bot belongs to the bot's
//     conversation, whatever order the two reach cc-connect in. The root
//     may be missing when the reply comes: pushed to an instance that was
//     killed before acknowledging it (its redelivery is still to come, or
//     never comes), or simply slower. So a reply without a mention in a
//     thread the engine has no conversation for is journaled with the
//     check checkRoot: the thread's root is read back (one message), and
//     when it mentions the bot it is accepted first, from the platform's
//     copy and under its own id (so that its own delivery, when it comes,
//     is a duplicate), and the reply runs after it; else the reply is
//     dropped and the thread remembered as rootless, so that chatter in it
//     is neither journaled nor read back again. A root taken already (in
//     a cluster: answered by the host that served the thread before,
//     answered.go) is not accepted again: the reply alone runs.
//   - Within one instance nothing of a conversation is missing when a
//     message comes: the adapters hand its messages over in the order
//     they came. After a restart the dead instance may have taken messages
//     it never journaled, and their retries come after newer messages
//     posted to the new one, too late to run before them (order.go). So
//     the first message of a known thread that an engine takes, within
//     gapWindow of its start, is journaled with the check checkGap: the
//     latest gapLookback messages before it are read, and the people's
//     messages posted after the thread's last one the engine has seen (its
//     anchor: taken already, answered.go) are accepted first, oldest
//     first, from the platform's copy and under their own ids, so that
//     their retries are duplicates. Without an anchor in what was read
//     (the gap is longer, or the seen window has passed) nothing is taken:
//     what lies before could be chatter the bot never took. A message with
//     files is left to its retry (history names files, it cannot fetch
//     them), and so is one of a user who may not use the agent here.
//
// The checks are journaled with their message: a kill before they were
// made leaves them to the next start.

// The checks a message may carry (workItem.checks, inbox.Entry.Checks).
const (
	checkRoot = "root"
	checkGap  = "gap"
)

const (
	// rootLookupTimeout bounds reading a thread's root, the first time;
	// each try after a failure waits twice as long, up to
	// rootLookupTries times as long (2 s, 4 s, 8 s).
	rootLookupTimeout = 2 * time.Second
	rootLookupTries   = 4
	// gapWindow is how long after its start an engine looks for what a
	// dead instance left unjournaled: Slack retries an event for minutes,
	// not hours.
	gapWindow = 10 * time.Minute
	// gapLookback is how many messages before the first one are read.
	gapLookback = 20
	// threadMemory is how many threads are remembered as rootless, and as
	// read back for a gap: a thread forgotten is read once more.
	threadMemory = 4096
)

// threadChecks are the engine's memories of which threads were read back.
type threadChecks struct {
	born       time.Time // the start, which bounds gapWindow
	rootless   *Recent   // threads whose root does not mention the bot
	gapChecked *Recent   // conversations whose thread was read back for a gap
}

func newThreadChecks(now time.Time) *threadChecks {
	return &threadChecks{born: now, rootless: NewRecent(threadMemory), gapChecked: NewRecent(threadMemory)}
}

// Unmentioned sorts a message that needed a mention of the bot and has
// none: in a conversation the engine knows it is taken as any other
// (neither flag); in a thread read already and found not to be the bot's
// it is ignored; a reply in a thread the platform can read back may belong
// to a thread whose root mentions the bot, and is journaled with
// checkRoot (check); anything else is ignored.
func (e *Set) Unmentioned(a platform.Adapter, m platform.Message) (check, ignore bool) {
	t := m.Target
	key := Key(t)
	switch {
	case e.threads.rootless.Has(key):
		return false, true
	case e.Has(key):
		return false, false
	}
	_, reads := a.(platform.HistoryReader)
	if reads && !m.IsDM && t.Thread != "" && t.Thread != t.MessageID {
		return true, false
	}
	return false, true
}

// checksFor are the checks m is journaled with: checkRoot for a reply the
// engine took without a mention (unrooted), and checkGap for the first
// message of a known thread within gapWindow of the start, once per
// conversation.
func (e *Set) checksFor(a platform.Adapter, m platform.Message, unrooted bool) []string {
	var checks []string
	if unrooted {
		checks = append(checks, checkRoot)
	}
	t := m.Target
	key := Key(t)
	if _, ok := a.(platform.HistoryReader); !ok || unrooted || m.Seq == 0 || t.Thread == "" || t.Thread == t.MessageID ||
		e.now().Sub(e.threads.born) > gapWindow || e.threads.gapChecked.Has(key) || !e.Has(key) {
		return checks
	}
	e.threads.gapChecked.Add(key)
	return append(checks, checkGap)
}

// check reads back what the item at the head of the FIFO needs, accepts
// what must run before it, and then lets it run or drops it (on the
// session goroutine).
func (s *Conversation) check(it workItem) {
	runs := true
	for _, c := range it.checks {
		switch c {
		case checkRoot:
			runs = s.acceptRoot(it)
		case checkGap:
			s.acceptMissing(it)
		}
		if !runs {
			break
		}
	}
	if !runs {
		s.jr.ack(it, inbox.AckCancel)
	}
	if s.mb.checked(it.inboxID, !runs) && !runs {
		s.e.busy.add(-1) // counted when it was queued
		s.e.noteQueue()
	}
}

// acceptRoot reads the root of it's thread and accepts it first when it
// mentions the bot; false when it does not (or cannot be read): the reply
// does not run, and the thread is remembered as rootless.
func (s *Conversation) acceptRoot(it workItem) bool {
	t := it.msg.Target
	hr, ok := s.chat.chat().(platform.HistoryReader)
	if !ok || s.e.threads.rootless.Has(s.key) {
		return false // read already: chatter queued before the answer
	}
	// A slow platform (or a busy host) must not cost the reply: the read
	// is tried again with a longer wait before the reply is given up.
	var hist []platform.HistoryMessage
	var err error
	for wait := rootLookupTimeout; ; wait *= 2 {
		ctx, cancel := context.WithTimeout(s.e.bg, wait)
		hist, err = hr.History(ctx, s.to, platform.HistoryQuery{Limit: 1})
		cancel()
		if err == nil || wait >= rootLookupTries*rootLookupTimeout || s.e.bg.Err() != nil {
			break
		}
		s.log.Info("Reading a thread's root failed; trying again", "error", err, "waited", wait)
	}
	if err != nil {
		s.log.Warn("Reading a thread's root failed; a reply without a mention in it is ignored", "error", err)
		return false
	}
	if len(hist) == 0 || !hist[0].Root || !hist[0].Mentioned || hist[0].IsBot {
		s.e.threads.rootless.Add(s.key)
		s.log.Debug("Ignoring a message that does not mention the bot", "message_id", it.inboxID)
		return false
	}
	r := hist[0]
	root := platform.Message{
		ID:        r.ID,
		Target:    platform.Target{Platform: t.Platform, Channel: t.Channel, Thread: t.Thread, MessageID: r.MessageID},
		UserID:    r.UserID,
		UserName:  r.UserName,
		Text:      r.Text,
		Mentioned: true,
		Received:  r.Time,
		Seq:       r.Seq,
	}
	b := s.liveBinding()
	if !b.Allowed(root.UserID) {
		s.log.Info("A thread's root read back is of a user who is not allowed; the reply without a mention is ignored",
			"message_id", root.ID, "user_id", root.UserID)
		return false
	}
	if s.e.cluster.forgotten(root.Received, s.e.now()) {
		// Older than the record of what the hosts answered: whether it
		// was answered cannot be told any more, and a month-old message
		// is not what the reply waits on. Taken as answered.
		s.log.Info("A thread's root read back is older than the cluster's record of answered messages; taken as answered, the reply without a mention runs alone",
			"message_id", root.ID, "posted", root.Received)
		return true
	}
	if s.taken(root.ID) {
		// Answered by the host that served the thread before (or
		// journaled here): the reply alone runs.
		s.log.Info("A thread's root read back was taken already; the reply without a mention runs alone", "message_id", root.ID)
		return true
	}
	// The root never reached the engine, or not yet: it goes first, so
	// that the conversation starts where it started.
	s.log.Info("Accepting a thread's root read back from the platform, before a reply that came first", "message_id", root.ID)
	s.acceptBefore(root, it.inboxID)
	return true
}

// acceptMissing accepts the messages of it's thread posted before it that
// no instance journaled (see above), oldest first.
func (s *Conversation) acceptMissing(it workItem) {
	m := it.msg
	t := m.Target
	hr, ok := s.chat.chat().(platform.HistoryReader)
	if !ok || s.e.jrs.seenIDs() == nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.e.bg, rootLookupTimeout)
	defer cancel()
	hist, err := hr.History(ctx, s.to, platform.HistoryQuery{Before: t.MessageID, Limit: gapLookback})
	if err != nil {
		s.log.Warn("Reading a thread back for messages missing before a restart failed", "error", err)
		return
	}
	for _, mm := range missing(hist, m, s.liveBinding(), s.taken) {
		s.log.Info("Accepting a message read back from its thread, posted before one that came first after a start",
			"message_id", mm.ID)
		s.acceptBefore(mm, it.inboxID)
	}
}

// missing are the people's messages of hist (newest first) posted after
// the thread's newest one taken already (answered.go) and before m, oldest
// first; nil without such an anchor.
func missing(hist []platform.HistoryMessage, m platform.Message, b binding.Binding, taken func(id string) bool) []platform.Message {
	t := m.Target
	var out []platform.Message
	for i := len(hist) - 1; i >= 0; i-- {
		h := hist[i]
		switch {
		case h.IsBot || h.FromSelf || h.Seq == 0 || h.Seq >= m.Seq:
			continue
		case taken(h.ID):
			// The anchor: the newest message of the thread this host
			// or another took. What came after it was lost with the
			// dead instance.
			slices.Reverse(out) // oldest first
			return out
		case h.Root:
			return nil // reached the root unseen: no anchor
		case len(h.Files) > 0 || !b.Allowed(h.UserID):
			continue
		}
		out = append(out, platform.Message{
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

// acceptBefore journals m, read back from the platform, into this
// conversation, right before the waiting message next (the journal entry
// it was read back for). Its own delivery, when it comes, is a duplicate; one being
// accepted right now wins, and m is then a duplicate here.
// Callers asked whether m was taken already (answered.go).
func (s *Conversation) acceptBefore(m platform.Message, next string) {
	claim, err := s.e.Claim(s.e.bg, m)
	switch {
	case errors.Is(err, inbox.ErrDuplicate):
		// Read back for another reply already (or delivered itself), and
		// still waiting behind this one, which came in before it (two
		// replies raced the root): the root goes first all the same.
		s.mb.moveBefore(m.ID, next)
		return
	case err != nil:
		s.log.Warn("Taking a message read back from its thread failed", "message_id", m.ID, "error", err)
		return
	case claim != nil:
		defer claim.Release()
	}
	if _, err := s.acceptItem(workItem{kind: itemTurn, msg: m, before: next}); err != nil {
		s.log.Warn("Journaling a message read back from its thread failed", "message_id", m.ID, "error", err)
	}
}
