package conv

import (
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/spend"
)

// Spending caps (docs/unattended.md). The ledger (Options.Spending) is
// charged after every turn from the cost Claude Code reports, to the
// binding and to the user whose message started the turn; before a turn
// starts, the binding's caps are checked and a turn over one is refused
// with the cap's text. A binding is named in the ledger by its platform
// and channel as configured ("slack/C0123", "tty/*").

func spendKey(b binding.Binding) string { return b.Platform + "/" + b.Channel }

// spendNow is the ledger's clock (the windows' and the reset times').
func (e *Set) spendNow() time.Time {
	if l := e.opts.Spending; l != nil {
		return l.Now()
	}
	return e.now()
}

// overCap returns the cap that refuses a turn of user in b, or nil.
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

// refuseOverCap refuses a turn over a spending cap before it starts: the
// conversation is told which cap and when it resets, and the message
// leaves the journal (it was answered). A turn a restart found started is
// not refused: it was under the cap when it began.
func (tr *turnRunner) refuseOverCap(it workItem) bool {
	if it.started || it.recovered || it.continuation {
		return false
	}
	b, ok := tr.liveBinding()
	if !ok {
		return false
	}
	over := tr.e.overCap(b, it.msg.UserID)
	if over == nil {
		return false
	}
	tr.log.Info("Turn refused: a spending cap is reached", "user_id", it.msg.UserID, "error", over)
	tr.chat.send(over.Text(tr.e.spendNow()))
	tr.jr.ack(it, inbox.AckResult)
	tr.mb.setState(stateIdle)
	return true
}

// chargeResults charges the results the turn's attempts had (a fallback
// makes two) to the ledger, in memory: settle calls it once the reply is
// posted, so that the next turn's caps count them, and the turn's tail
// writes the ledger (flushSpend). A crash before that write loses
// nothing that counts for long: a session's next result carries its
// total.
func (tr *turnRunner) chargeResults() {
	for _, res := range tr.charges {
		tr.charge(res)
	}
	tr.charges = tr.charges[:0]
}

// charge charges a turn's result to the ledger, in memory.
func (tr *turnRunner) charge(res *agentproc.Result) {
	l := tr.e.opts.Spending
	if l == nil || res == nil || res.TotalCostUSD <= 0 {
		return
	}
	b, ok := tr.liveBinding()
	if !ok {
		return
	}
	cost, err := l.Charge(spend.Turn{Binding: spendKey(b), User: tr.user, SessionID: res.SessionID, TotalUSD: res.TotalCostUSD})
	if err != nil {
		tr.log.Error("Charging the spending ledger failed", "error", err)
		return
	}
	tr.log.Debug("Turn charged", "user_id", tr.user, "cost_usd", cost, "session_id", res.SessionID)
}

// flushSpend writes the ledger's charges, on a turn's tail.
func (tr *turnRunner) flushSpend() {
	if l := tr.e.opts.Spending; l != nil {
		if err := l.Flush(); err != nil {
			tr.log.Error("Writing the spending ledger failed; the charge counts in memory", "error", err)
		}
	}
}

// recordForkSpend charges a side question's fork, from its parent's
// total.
func (s *Conversation) recordForkSpend(user, parent string, res *agentproc.Result) {
	l := s.e.opts.Spending
	if l == nil || res == nil || res.TotalCostUSD <= 0 {
		return
	}
	b, ok := s.e.resolve(s.to.Platform, s.to.Channel)
	if !ok {
		return
	}
	if _, err := l.Record(spend.Turn{Binding: spendKey(b), User: user, SessionID: res.SessionID, TotalUSD: res.TotalCostUSD,
		ForkedFrom: parent}); err != nil {
		s.log.Error("Writing the spending ledger failed; the charge counts in memory", "error", err)
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

// refuseSideOverCap refuses a side question over a spending cap: a fork
// costs like a turn.
func (s *Conversation) refuseSideOverCap(user string) bool {
	b, ok := s.e.resolve(s.to.Platform, s.to.Channel)
	if !ok {
		return false
	}
	over := s.e.overCap(b, user)
	if over == nil {
		return false
	}
	s.log.Info("Side question refused: a spending cap is reached", "user_id", user, "error", over)
	s.chat.send(SidePrefix + over.Text(s.e.spendNow()))
	return true
}
