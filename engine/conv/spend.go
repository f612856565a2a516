package conv

import (
	"crypto/rand"
	"log/slog"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/spend"
)

// Spending caps (docs/unattended.md). Before a turn starts it reserves an
// estimate of its cost against the binding's and the user's caps
// (spend.Ledger.Reserve), and a turn whose reservation does not fit is
// refused with the cap's text; when it ends, its results (the costs
// Claude Code reports) settle the reservation, charged to the binding and
// to the user whose message started the turn. Reserving before is what
// keeps a cap when many threads start turns at once. A binding is named
// in the ledger by its platform and channel as configured ("slack/C0123",
// "tty/*"); a turn's reservation by its conversation's key, one turn at a
// time, so that a turn a restart runs again takes over its first run's.

func spendKey(b binding.Binding) string { return b.Platform + "/" + b.Channel }

// spendNow is the ledger's clock (the windows' and the reset times').
func (e *Set) spendNow() time.Time {
	if l := e.opts.Spending; l != nil {
		return l.Now()
	}
	return e.now()
}

// overCap returns the cap reached for user in b, or nil: whether a run
// may be queued at all (Submit). Whether its turn runs is reserveTurn's.
func (e *Set) overCap(b binding.Binding, user string) *spend.OverCap {
	l := e.opts.Spending
	if l == nil || !b.Caps.Any() {
		return nil
	}
	if e.opts.SpendAdminsExempt && b.Admin(user) {
		return nil
	}
	return l.Check(spendKey(b), user, b.Caps)
}

// liveBinding is the binding in force now for the conversation.
func (tr *turnRunner) liveBinding() (binding.Binding, bool) {
	return tr.e.resolve(tr.chat.to.Platform, tr.chat.to.Channel)
}

// reserveTurn reserves a turn's estimate under key against b's caps
// before it starts: nil when it may start, else the cap that refuses it
// (nothing is held then). A resumed turn (one a restart found started) and
// an exempt admin's are never refused, and hold their estimate all the
// same.
func (e *Set) reserveTurn(b binding.Binding, key, user string, resumed bool, log *slog.Logger) *spend.OverCap {
	l := e.opts.Spending
	if l == nil || !b.Caps.Any() {
		return nil
	}
	exempt := resumed || (e.opts.SpendAdminsExempt && b.Admin(user))
	over, err := l.Reserve(spend.Hold{Key: key, Binding: spendKey(b), User: user}, b.Caps, exempt)
	if err != nil {
		log.Error("Writing the spending ledger failed; the reservation counts in memory", "error", err)
	}
	return over
}

// refuseOverCap reserves the turn's estimate before it starts, or refuses
// the turn when it does not fit under a cap: the conversation is told
// which cap and when it resets, and the message leaves the journal (it
// was answered). A turn a restart found started is not refused: it was
// under the cap when it began.
func (tr *turnRunner) refuseOverCap(it workItem) bool {
	b, ok := tr.liveBinding()
	if !ok {
		return false
	}
	over := tr.e.reserveTurn(b, tr.key, it.msg.UserID, it.started || it.recovered || it.continuation, tr.log)
	if over == nil {
		return false
	}
	tr.log.Info("Turn refused: a spending cap is reached", "user_id", it.msg.UserID, "error", over)
	tr.chat.send(over.Text(tr.e.spendNow()))
	tr.jr.ack(it, inbox.AckResult)
	tr.mb.setState(stateIdle)
	return true
}

// releaseSpend frees the reservation of a turn that was admitted but does
// not run (admit gave up after refuseOverCap).
func (tr *turnRunner) releaseSpend() {
	if l := tr.e.opts.Spending; l != nil {
		if err := l.Release(tr.key); err != nil {
			tr.log.Error("Writing the spending ledger failed; the reservation is released in memory", "error", err)
		}
	}
}

// chargeResults settles the turn's reservation with the results its
// attempts had (a fallback makes two), in memory: settle calls it once the
// reply is posted, so that the next turn's caps count them, and the
// turn's tail writes the ledger (flushSpend). A crash before that write
// loses nothing that counts for long: a session's next result carries its
// total, and the reservation in the file holds until then.
func (tr *turnRunner) chargeResults() {
	results := tr.charges
	tr.charges = nil
	l := tr.e.opts.Spending
	if l == nil {
		return
	}
	var turns []spend.Turn
	if b, ok := tr.liveBinding(); ok {
		for _, res := range results {
			if res != nil && res.TotalCostUSD > 0 {
				turns = append(turns, spend.Turn{Binding: spendKey(b), User: tr.user, SessionID: res.SessionID, TotalUSD: res.TotalCostUSD})
			}
		}
	}
	cost, err := l.Settle(tr.key, turns...)
	if err != nil {
		tr.log.Error("Charging the spending ledger failed", "error", err)
		return
	}
	if len(turns) > 0 {
		tr.log.Debug("Turn charged", "user_id", tr.user, "cost_usd", cost, "session_id", turns[len(turns)-1].SessionID)
	}
}

// flushSpend writes the ledger's charges, on a turn's tail.
func (tr *turnRunner) flushSpend() {
	if l := tr.e.opts.Spending; l != nil {
		if err := l.Flush(); err != nil {
			tr.log.Error("Writing the spending ledger failed; the charge counts in memory", "error", err)
		}
	}
}

// recordForkSpend settles a side question's reservation (hold, from
// refuseSideOverCap) with its fork's result, charged from its parent's
// total, and writes the ledger.
func (s *Conversation) recordForkSpend(hold, user, parent string, res *agentproc.Result) {
	l := s.e.opts.Spending
	if l == nil {
		return
	}
	var turns []spend.Turn
	if b, ok := s.e.resolve(s.to.Platform, s.to.Channel); ok && res != nil && res.TotalCostUSD > 0 {
		turns = append(turns, spend.Turn{Binding: spendKey(b), User: user, SessionID: res.SessionID, TotalUSD: res.TotalCostUSD,
			ForkedFrom: parent})
	}
	_, err := l.Settle(hold, turns...)
	if err == nil {
		err = l.Flush()
	}
	if err != nil {
		s.log.Error("Writing the spending ledger failed; the charge counts in memory", "error", err)
	}
}

// releaseSide frees a side question's reservation when it ended without a
// result (recordForkSpend settled it otherwise).
func (s *Conversation) releaseSide(hold string) {
	if l := s.e.opts.Spending; l != nil && hold != "" {
		if err := l.Release(hold); err != nil {
			s.log.Error("Writing the spending ledger failed; the reservation is released in memory", "error", err)
		}
	}
}

// spendStatus is !status's spend line; "" without a ledger.
func (s *Conversation) spendStatus(user string) string {
	l := s.e.opts.Spending
	if l == nil {
		return ""
	}
	b, ok := s.e.resolve(s.to.Platform, s.to.Channel)
	if !ok {
		return ""
	}
	return l.StatusLine(spendKey(b), user, b.Caps)
}

// refuseSideOverCap reserves a side question's estimate (a fork costs
// like a turn) under a key of its own, or refuses it over a spending cap.
// It returns the reservation's key for recordForkSpend and releaseSide.
func (s *Conversation) refuseSideOverCap(user string) (hold string, refused bool) {
	b, ok := s.e.resolve(s.to.Platform, s.to.Channel)
	if !ok {
		return "", false
	}
	hold = s.key + "\x00btw\x00" + rand.Text() // side questions of one conversation may run at once
	over := s.e.reserveTurn(b, hold, user, false, s.log)
	if over == nil {
		return hold, false
	}
	s.log.Info("Side question refused: a spending cap is reached", "user_id", user, "error", over)
	s.chat.send(SidePrefix + over.Text(s.e.spendNow()))
	return "", true
}
