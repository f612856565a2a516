package conv

import (
	"crypto/rand"
	"log/slog"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/binding"
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

// spending is the engine's ledger as every conversation uses it, and the
// rule of who is exempt; a nil ledger means no caps.
type spending struct {
	ledger       *spend.Ledger
	adminsExempt bool
	clock        func() time.Time // when there is no ledger
}

// now is the ledger's clock (the windows' and the reset times').
func (sp *spending) now() time.Time {
	if sp.ledger != nil {
		return sp.ledger.Now()
	}
	return sp.clock()
}

// overCap returns the cap reached for user in b, or nil: whether a run
// may be queued at all (Submit). Whether its turn runs is reserve's.
func (sp *spending) overCap(b binding.Binding, user string) *spend.OverCap {
	if sp.ledger == nil || !b.Caps.Any() {
		return nil
	}
	if sp.adminsExempt && b.Admin(user) {
		return nil
	}
	return sp.ledger.Check(spendKey(b), user, b.Caps)
}

// reserve reserves a turn's estimate under key against b's caps before it
// starts: nil when it may start, else the cap that refuses it (nothing is
// held then). A resumed turn (one a restart found started) and an exempt
// admin's are never refused, and hold their estimate all the same.
func (sp *spending) reserve(b binding.Binding, key, user string, resumed bool, log *slog.Logger) *spend.OverCap {
	if sp.ledger == nil || !b.Caps.Any() {
		return nil
	}
	exempt := resumed || (sp.adminsExempt && b.Admin(user))
	over, err := sp.ledger.Reserve(spend.Hold{Key: key, Binding: spendKey(b), User: user}, b.Caps, exempt)
	if err != nil {
		log.Error("Writing the spending ledger failed; the reservation counts in memory", "error", err)
	}
	return over
}

// release frees the reservation under key of work that does not run.
func (sp *spending) release(key string, log *slog.Logger) {
	if sp.ledger == nil || key == "" {
		return
	}
	if err := sp.ledger.Release(key); err != nil {
		log.Error("Writing the spending ledger failed; the reservation is released in memory", "error", err)
	}
}

// flush writes the ledger's charges.
func (sp *spending) flush(log *slog.Logger) {
	if sp.ledger == nil {
		return
	}
	if err := sp.ledger.Flush(); err != nil {
		log.Error("Writing the spending ledger failed; the charge counts in memory", "error", err)
	}
}

// purse is a conversation's side of the ledger: the running turn's
// reservation (under the conversation's key), its results until they are
// charged, a side question's reservations, and !status's line.
type purse struct {
	*spending
	key     string                         // the conversation's: its turns' reservation
	binding func() (binding.Binding, bool) // the binding in force now
	log     *slog.Logger

	user    string              // whose message the running turn is
	charges []*agentproc.Result // the running turn's results not yet charged
}

// reserveTurn reserves the estimate of it's turn: nil when it may start,
// else the cap that refuses it. A turn a restart found started is not
// refused: it was under the cap when it began.
func (p *purse) reserveTurn(it workItem) *spend.OverCap {
	b, ok := p.binding()
	if !ok {
		return nil
	}
	p.user = it.msg.UserID
	return p.reserve(b, p.key, it.msg.UserID, it.started || it.recovered || it.continuation, p.log)
}

// releaseTurn frees the reservation of a turn that was admitted but does
// not run.
func (p *purse) releaseTurn() { p.release(p.key, p.log) }

// settleTurn settles the turn's reservation with the results its attempts
// had (a fallback makes two), in memory: settle calls it once the reply is
// posted, so that the next turn's caps count them, and the turn's tail
// writes the ledger (flush). A crash before that write loses nothing that
// counts for long: a session's next result carries its total, and the
// reservation in the file holds until then.
func (p *purse) settleTurn() {
	results := p.charges
	p.charges = nil
	if p.ledger == nil {
		return
	}
	var turns []spend.Turn
	if b, ok := p.binding(); ok {
		for _, res := range results {
			if res != nil && res.TotalCostUSD > 0 {
				turns = append(turns, spend.Turn{Binding: spendKey(b), User: p.user, SessionID: res.SessionID, TotalUSD: res.TotalCostUSD})
			}
		}
	}
	cost, err := p.ledger.Settle(p.key, turns...)
	if err != nil {
		p.log.Error("Charging the spending ledger failed", "error", err)
		return
	}
	if len(turns) > 0 {
		p.log.Debug("Turn charged", "user_id", p.user, "cost_usd", cost, "session_id", turns[len(turns)-1].SessionID)
	}
}

// reserveFork reserves a side question's estimate (a fork costs like a
// turn) under a key of its own, since side questions of one conversation
// may run at once; over, when set, refuses it and nothing is held.
func (p *purse) reserveFork(user string) (hold string, over *spend.OverCap) {
	b, ok := p.binding()
	if !ok {
		return "", nil
	}
	hold = p.key + "\x00btw\x00" + rand.Text()
	if over = p.reserve(b, hold, user, false, p.log); over != nil {
		return "", over
	}
	return hold, nil
}

// settleFork settles a side question's reservation with its fork's
// result, charged from its parent's total, and writes the ledger.
func (p *purse) settleFork(hold, user, parent string, res *agentproc.Result) {
	if p.ledger == nil {
		return
	}
	var turns []spend.Turn
	if b, ok := p.binding(); ok && res != nil && res.TotalCostUSD > 0 {
		turns = append(turns, spend.Turn{Binding: spendKey(b), User: user, SessionID: res.SessionID, TotalUSD: res.TotalCostUSD,
			ForkedFrom: parent})
	}
	_, err := p.ledger.Settle(hold, turns...)
	if err == nil {
		err = p.ledger.Flush()
	}
	if err != nil {
		p.log.Error("Writing the spending ledger failed; the charge counts in memory", "error", err)
	}
}

// statusLine is !status's spend line; "" without a ledger.
func (p *purse) statusLine(user string) string {
	if p.ledger == nil {
		return ""
	}
	b, ok := p.binding()
	if !ok {
		return ""
	}
	return p.ledger.StatusLine(spendKey(b), user, b.Caps)
}
