package conv

import "slices"

// Answers in the order they were asked. A conversation's messages reach
// the engine in the order the platform delivers them, which is not always
// the order they were posted: a message whose delivery met a kill of
// cc-connect comes again as the platform's retry, after messages posted
// later, and the journal then holds the later one first. Each platform
// orders a conversation's messages (platform.Message.Seq: Slack's ts, a
// Discord snowflake, a Telegram message id), so the rule is:
//
//   - the work waiting in a conversation's FIFO runs in Seq order: an item
//     is queued before the waiting items that are later than it, not at
//     the end (mailbox.push, insertAt);
//   - an item without a Seq (a run of a trigger, a message of the
//     terminal) or of another channel is a barrier: nothing moves ahead of
//     it, and it moves ahead of nothing, so it keeps its place; so is one
//     that was started before a restart;
//   - a turn that started cannot go back in time: a message that arrives
//     after a later one started runs next (before the later ones still
//     waiting), and its sender is told why its answer comes after that
//     one's (render.Late);
//   - the journal keeps each message's Seq (inbox.Entry.Seq), and recovery
//     queues what it finds by the same rule, the started messages first
//     (inPlatformOrder): the order survives a restart. A waiting message
//     posted before a started one came late, and is told so again
//     (lateAtRecovery): the instance that died told it only once the
//     running turn's loop took the notice, after the start mark.
//
// The running turn is never held back for a message that may still come.
// A Slack event carries no sequence number, so a missing message shows
// only in the thread itself: the first message of a known thread after a
// start has what no instance journaled read back and taken first
// (ordergap.go), which costs the normal path nothing; a message later
// even than that runs next, with render.Late.

// before reports whether item a was posted before item b by the platform's
// order: both have one, in the same channel of the same platform.
func before(a, b workItem) bool {
	x, y := a.msg, b.msg
	return x.Seq != 0 && y.Seq != 0 && x.Target.Platform == y.Target.Platform &&
		x.Target.Channel == y.Target.Channel && x.Seq < y.Seq
}

// insertAt is where it goes in items: before the run of waiting items at
// the end that were posted after it, stopping at the first that was not,
// has no order or was started before a restart (recovery runs it first):
// a barrier.
func insertAt(items []workItem, it workItem) int {
	i := len(items)
	for i > 0 && !items[i-1].started && before(it, items[i-1]) {
		i--
	}
	return i
}

// inPlatformOrder orders a journal's pending items for the FIFO: those
// that were started first, in the journal's order but the messages
// steered into a turn after the others (the first is what recovery looks
// at first), then the others queued one by one as the
// mailbox queues them, so that a retry journaled after a later message
// runs before it.
func inPlatformOrder(items []workItem) []workItem {
	var started, waiting []workItem
	for _, it := range items {
		if it.started {
			// A message steered into a turn (steer.go) goes after the
			// turn's, even when it was journaled first (the turn's
			// message read back after it: checks.go).
			// Among themselves, steered messages keep the platform's
			// order, as they were written into the turn.
			at := len(started)
			for at > 0 && started[at-1].steeredInto != "" && (it.steeredInto == "" || before(it, started[at-1])) {
				at--
			}
			started = slices.Insert(started, at, it)
			continue
		}
		waiting = slices.Insert(waiting, insertAt(waiting, it), it)
	}
	return append(started, waiting...)
}

// lateAtRecovery is where, among a journal's pending items in the order
// recovery runs them (inPlatformOrder), the waiting messages are that
// were posted before a started one ahead of them. Each came late to the
// instance that died, which told its sender only once the running turn's
// loop took the notice, after the started one's start mark: a kill in
// between lost it, so the restart tells it again. A kill after it tells
// it twice, a line twice rather than an answer out of order unexplained.
func lateAtRecovery(items []workItem) []int {
	var late []int
	for i, it := range items {
		if it.kind != itemTurn || it.started {
			continue
		}
		if slices.ContainsFunc(items[:i], func(x workItem) bool { return x.started && before(it, x) }) {
			late = append(late, i)
		}
	}
	return late
}
