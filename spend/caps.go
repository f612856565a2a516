package spend

import (
	"fmt"
	"sort"
	"time"
)

// Spent is what a binding, or a user in it, spent in the current windows.
type Spent struct {
	Day, Month float64
	// DayResets and MonthResets are when the current day and month end.
	DayResets, MonthResets time.Time
}

// Binding returns what the binding spent today and this month.
func (l *Ledger) Binding(binding string) Spent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var w *window
	if sc := l.f.Bindings[binding]; sc != nil {
		w = &sc.window
	}
	return l.spentLocked(w)
}

// User returns what user spent in binding today and this month.
func (l *Ledger) User(binding, user string) Spent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var w *window
	if sc := l.f.Bindings[binding]; sc != nil {
		w = sc.Users[user]
	}
	return l.spentLocked(w)
}

func (l *Ledger) spentLocked(w *window) Spent {
	now := l.now()
	day, month := l.labels(now)
	d, m := w.spent(day, month)
	dr, mr := l.resets(now)
	return Spent{Day: d.usd(), Month: m.usd(), DayResets: dr, MonthResets: mr}
}

// Caps are a binding's spending caps in USD; zero means no cap.
type Caps struct {
	Daily, Monthly         float64 // the whole binding
	UserDaily, UserMonthly float64 // each user of the binding
}

// Any reports whether any cap is set.
func (c Caps) Any() bool { return c.Daily > 0 || c.Monthly > 0 || c.UserDaily > 0 || c.UserMonthly > 0 }

// OverCap says which cap refuses a new turn.
type OverCap struct {
	// User is the user whose cap it is; "" for the binding's own.
	User string
	// Period is "daily" or "monthly".
	Period string
	Limit  float64
	Spent  float64
	// Resets is when the window ends and turns are taken again.
	Resets time.Time
	// Held is what the turns running now hold against the cap, and
	// Estimate what the refused turn would have held (Reserve): a turn is
	// refused under the cap when its estimate does not fit beside them.
	Held, Estimate float64
}

// Check says whether user may start a turn in binding: nil when no cap is
// reached, else the first cap reached (the binding's before the user's,
// daily before monthly). It counts what was spent, not what running turns
// hold: it answers whether a run may be queued at all, and Reserve, when
// the turn starts, whether it runs.
func (l *Ledger) Check(binding, user string, caps Caps) *OverCap {
	if !caps.Any() {
		return nil
	}
	b, u := l.Binding(binding), l.User(binding, user)
	for _, c := range []struct {
		user         string
		period       string
		limit, spent float64
		resets       time.Time
	}{
		{"", "daily", caps.Daily, b.Day, b.DayResets},
		{"", "monthly", caps.Monthly, b.Month, b.MonthResets},
		{user, "daily", caps.UserDaily, u.Day, u.DayResets},
		{user, "monthly", caps.UserMonthly, u.Month, u.MonthResets},
	} {
		if c.limit > 0 && c.spent >= c.limit {
			return &OverCap{User: c.user, Period: c.period, Limit: c.limit, Spent: c.spent, Resets: c.resets}
		}
	}
	return nil
}

// Error makes an OverCap usable as an error (for logs).
func (o *OverCap) Error() string {
	who := "binding"
	if o.User != "" {
		who = "user " + o.User
	}
	if o.under() {
		return fmt.Sprintf("%s %s spending cap of $%.2f would be exceeded ($%.2f spent, $%.2f held by running turns, $%.2f for this one)",
			who, o.Period, o.Limit, o.Spent, o.Held, o.Estimate)
	}
	return fmt.Sprintf("%s %s spending cap of $%.2f reached ($%.2f spent)", who, o.Period, o.Limit, o.Spent)
}

// under reports whether the cap is not reached yet: the turn was refused
// for what the running turns hold.
func (o *OverCap) under() bool { return o.Held > 0 && toMicro(o.Spent) < toMicro(o.Limit) }

// Text is the refusal to post in the conversation: which cap, how much
// was spent, and when it resets (in the ledger's zone, and how far away).
func (o *OverCap) Text(now time.Time) string {
	if o.under() {
		return o.heldText(now)
	}
	window := "today"
	if o.Period == "monthly" {
		window = "this month"
	}
	who, whose := "This binding has", "its"
	if o.User != "" {
		who, whose = "You have", "your"
	}
	return fmt.Sprintf("%s reached %s %s spending cap of $%.2f ($%.2f spent %s), so this message was not sent to Claude. "+
		"The cap resets at %s (%s).", who, whose, o.Period, o.Limit, o.Spent, window,
		o.Resets.Format("2006-01-02 15:04 MST"), in(o.Resets.Sub(now)))
}

func in(d time.Duration) string {
	d = d.Round(time.Minute)
	switch {
	case d < time.Minute:
		return "in less than a minute"
	case d < time.Hour:
		return fmt.Sprintf("in %dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("in %dh %dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("in %d days", int((d+12*time.Hour)/(24*time.Hour)))
}

// Figure is one row of the current spend, for metrics and listings.
type Figure struct {
	Binding string
	User    string // "" for the binding's total
	Day     float64
	Month   float64
}

// Figures returns the current day's and month's spend of every binding and
// of every user in it, sorted, bindings before their users.
func (l *Ledger) Figures() []Figure {
	l.mu.Lock()
	defer l.mu.Unlock()
	day, month := l.labels(l.now())
	var out []Figure
	for b, sc := range l.f.Bindings {
		d, m := sc.window.spent(day, month)
		out = append(out, Figure{Binding: b, Day: d.usd(), Month: m.usd()})
		for u, w := range sc.Users {
			d, m := w.spent(day, month)
			out = append(out, Figure{Binding: b, User: u, Day: d.usd(), Month: m.usd()})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Binding != out[j].Binding {
			return out[i].Binding < out[j].Binding
		}
		return out[i].User < out[j].User
	})
	return out
}

// DayFigure is what a binding (User "") or a person in it spent on one
// day (its label, 2006-01-02 in the ledger's zone).
type DayFigure struct {
	Day     string
	Binding string
	User    string
	USD     float64
}

// Days returns the spend of each of the last KeepDays days, today
// included, newest day first, bindings before their users. Days without
// spend, and those before this ledger kept days, are not listed.
func (l *Ledger) Days() []DayFigure {
	l.mu.Lock()
	defer l.mu.Unlock()
	oldest := l.oldestDay(l.now())
	var out []DayFigure
	add := func(b, u string, w *window) {
		for d, m := range w.Days {
			if d >= oldest {
				out = append(out, DayFigure{Day: d, Binding: b, User: u, USD: m.usd()})
			}
		}
	}
	for b, sc := range l.f.Bindings {
		add(b, "", &sc.window)
		for u, w := range sc.Users {
			add(b, u, w)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		switch {
		case out[i].Day != out[j].Day:
			return out[i].Day > out[j].Day
		case out[i].Binding != out[j].Binding:
			return out[i].Binding < out[j].Binding
		}
		return out[i].User < out[j].User
	})
	return out
}

// StatusLine is the !status line of a conversation: what the binding and
// the user spent, against their caps where set.
func (l *Ledger) StatusLine(binding, user string, caps Caps) string {
	b, u := l.Binding(binding), l.User(binding, user)
	of := func(spent, limit float64) string {
		if limit > 0 {
			return fmt.Sprintf("$%.2f of $%.2f", spent, limit)
		}
		return fmt.Sprintf("$%.2f", spent)
	}
	return fmt.Sprintf("Spend: binding %s today, %s this month; you %s today, %s this month",
		of(b.Day, caps.Daily), of(b.Month, caps.Monthly), of(u.Day, caps.UserDaily), of(u.Month, caps.UserMonthly))
}

// Now is the ledger's clock: the instant its windows and an OverCap's
// Text are read at.
func (l *Ledger) Now() time.Time { return l.now() }
