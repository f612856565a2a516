package spend

import (
	"fmt"
	"maps"
	"time"
)

// Reserving before a turn and settling after it is what keeps a cap when
// many conversations start turns at once: checking the totals before a
// turn and charging it after lets every turn that starts before the first
// one ends pass the same check. Each turn holds an estimate of its cost
// (Reserve) that counts against the caps like money spent, and its real
// cost replaces the estimate when it ends (Settle).
//
// The rule (per cap: the binding's and the user's, daily and monthly): a
// turn may start when its estimate fits under the cap beside what was
// spent and what the turns running now hold; or, when no other turn
// holds anything against that cap, while the cap is not reached (so that
// a cap smaller than one turn still lets one turn run, as it always
// did). A cap is then exceeded by at most one turn's cost, however many
// turns start at once, as long as the others cost no more than they held.

// DefaultReserve is the least a turn holds, in USD, when the binding's
// recent turns cost less (or it has none yet): about a long Sonnet turn.
const DefaultReserve = 0.50

// recentTurns is how many of a binding's last turn costs its estimate is
// reckoned from.
const recentTurns = 20

// orphanGrace is how long a reservation left by an earlier process (a
// crash mid-turn, or a ledger written before the turn's settle was) keeps
// counting after the start, unless its turn runs again and takes it over.
// The turns a restart resumes do so at once.
const orphanGrace = 15 * time.Minute

// hold is the reservation of one running turn.
type hold struct {
	Binding string    `json:"binding"`
	User    string    `json:"user"`
	USD     micro     `json:"micro_usd"`
	At      time.Time `json:"at"`
	// until is when a hold read from the file stops counting; zero for
	// one of this process, which counts until its Settle.
	until time.Time
}

// Hold names a turn's reservation.
type Hold struct {
	// Key is the running turn: one at a time per key (the engine's
	// conversation key; a side question its own). A reservation under the
	// same key is replaced, so that a turn a restart runs again takes over
	// the one its first run left.
	Key string
	// Binding and User are whose caps the turn counts against, as in Turn.
	Binding string
	User    string
}

// SetReserve sets the least a turn holds, in USD (spend.turn_reserve_usd);
// zero or less leaves DefaultReserve.
func (l *Ledger) SetReserve(usd float64) {
	if usd <= 0 {
		usd = DefaultReserve
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reserve = toMicro(usd)
}

// Estimate is what a turn of binding holds when it starts: the larger of
// the reserve (SetReserve) and the most one of the binding's last 20
// turns cost.
func (l *Ledger) Estimate(binding string) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.estimateLocked(binding).usd()
}

func (l *Ledger) estimateLocked(binding string) micro {
	est := l.reserve
	for _, c := range l.f.Recent[binding] {
		est = max(est, c)
	}
	return est
}

// Reserve holds the estimate of h's turn against caps before it starts,
// and writes the ledger, so that a crash mid-turn keeps it. It returns the
// cap that refuses the turn, and holds nothing then. An exempt turn (an
// exempt admin's, or one a restart found started) is never refused but
// holds its estimate all the same. With no caps nothing is held.
//
// When the write fails the reservation counts in memory (a full disk must
// not lift a cap) and the error is returned with a nil OverCap: the turn
// may start.
func (l *Ledger) Reserve(h Hold, caps Caps, exempt bool) (*OverCap, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.expireHoldsLocked(now)
	if _, ok := l.f.Holds[h.Key]; ok {
		delete(l.f.Holds, h.Key)
		l.dirty = true
	}
	if !caps.Any() {
		return nil, nil
	}
	est := l.estimateLocked(h.Binding)
	if !exempt {
		if over := l.overLocked(h.Binding, h.User, caps, est, now); over != nil {
			return over, nil
		}
	}
	l.f.Holds[h.Key] = &hold{Binding: h.Binding, User: h.User, USD: est, At: now}
	l.dirty = true
	return nil, l.flushLocked()
}

// Settle ends the turn that holds key: its results are charged as Charge
// does (to the caps at once, to the file at the next Flush), its cost
// joins the binding's recent ones, and its reservation is released. It
// returns what the turn cost. A key that holds nothing (no caps, or the
// hold expired) is charged all the same.
func (l *Ledger) Settle(key string, turns ...Turn) (float64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.f.Holds[key]; ok {
		delete(l.f.Holds, key)
		l.dirty = true
	}
	var total micro
	for _, t := range turns {
		cost, err := l.chargeLocked(t)
		if err != nil {
			return total.usd(), err
		}
		total += cost
	}
	if len(turns) > 0 {
		b := turns[0].Binding
		recent := append(l.f.Recent[b], total)
		l.f.Recent[b] = recent[max(0, len(recent)-recentTurns):]
	}
	return total.usd(), nil
}

// Release ends the hold of a turn that did not run, and writes the ledger.
func (l *Ledger) Release(key string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.f.Holds[key]; !ok {
		return nil
	}
	delete(l.f.Holds, key)
	l.dirty = true
	return l.flushLocked()
}

// Held returns what the turns running now hold against binding, and
// against user in it.
func (l *Ledger) Held(binding, user string) (bindingUSD, userUSD float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expireHoldsLocked(l.now())
	b, u := l.heldLocked(binding, user)
	return b.usd(), u.usd()
}

func (l *Ledger) heldLocked(binding, user string) (b, u micro) {
	for _, h := range l.f.Holds {
		if h.Binding != binding {
			continue
		}
		b += h.USD
		if h.User == user {
			u += h.USD
		}
	}
	return b, u
}

// expireHoldsLocked drops the holds of an earlier process whose grace has
// passed.
func (l *Ledger) expireHoldsLocked(now time.Time) {
	maps.DeleteFunc(l.f.Holds, func(_ string, h *hold) bool {
		if !h.until.IsZero() && !now.Before(h.until) {
			l.dirty = true
			return true
		}
		return false
	})
}

// overLocked is the first cap a turn estimated at est cannot start under
// (see the rule at the top of this file), or nil.
func (l *Ledger) overLocked(binding, user string, caps Caps, est micro, now time.Time) *OverCap {
	day, month := l.labels(now)
	dayResets, monthResets := l.resets(now)
	var bw, uw *window
	if sc := l.f.Bindings[binding]; sc != nil {
		bw, uw = &sc.window, sc.Users[user]
	}
	bd, bm := bw.spent(day, month)
	ud, um := uw.spent(day, month)
	bh, uh := l.heldLocked(binding, user)
	for _, c := range []struct {
		user        string
		period      string
		limit       float64
		spent, held micro
		resets      time.Time
	}{
		{"", "daily", caps.Daily, bd, bh, dayResets},
		{"", "monthly", caps.Monthly, bm, bh, monthResets},
		{user, "daily", caps.UserDaily, ud, uh, dayResets},
		{user, "monthly", caps.UserMonthly, um, uh, monthResets},
	} {
		if c.limit <= 0 {
			continue
		}
		limit := toMicro(c.limit)
		if c.spent >= limit || (c.held > 0 && c.spent+c.held+est > limit) {
			return &OverCap{User: c.user, Period: c.period, Limit: c.limit, Spent: c.spent.usd(), Resets: c.resets,
				Held: c.held.usd(), Estimate: est.usd()}
		}
	}
	return nil
}

// heldText is the refusal of a turn whose estimate does not fit beside
// what the turns running now hold, though the cap is not reached yet.
func (o *OverCap) heldText(now time.Time) string {
	window := "today"
	if o.Period == "monthly" {
		window = "this month"
	}
	who := "you over your"
	if o.User == "" {
		who = "this binding over its"
	}
	return fmt.Sprintf("This message would take %s %s spending cap of $%.2f: $%.2f spent %s and $%.2f held by turns still running, "+
		"and a turn is reckoned at $%.2f. It was not sent to Claude: send it again once those turns end "+
		"(the cap resets at %s, %s).", who, o.Period, o.Limit, o.Spent, window, o.Held, o.Estimate,
		o.Resets.Format("2006-01-02 15:04 MST"), in(o.Resets.Sub(now)))
}
