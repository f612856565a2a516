package console

import (
	"context"
	"net/http"
	"time"
)

// The schedules and spend pages. A Backend offers them by implementing
// these too (found by type assertion); without, the pages say so.

// Schedule is one schedule as the schedules page shows it.
type Schedule struct {
	Name     string
	Cron     string
	Binding  string
	Next     time.Time
	Paused   bool
	PausedBy string
	LastRun  string // the id of the last run started
	Admin    bool   // who may pause and resume it
	// LastError is why the last run that did not start as due did not,
	// and when; "" none.
	LastError   string
	LastErrorAt time.Time
}

// Schedules is a Backend's schedules: those of the bindings that allow
// who, and pause/resume for the binding's admins.
type Schedules interface {
	Schedules(ctx context.Context, who Identity) ([]Schedule, error)
	SetPaused(ctx context.Context, who Identity, name string, paused bool) error
}

// SpendRow is what a binding (User "") or a person in it spent today and
// this month.
type SpendRow struct {
	Binding    string
	User       string
	Day, Month float64
}

// SpendDay is what a binding (User "") or a person in it spent on one
// past or present day.
type SpendDay struct {
	Day     string // 2006-01-02 in the ledger's zone
	Binding string
	User    string
	USD     float64
}

// Spending is a Backend's spend, for the bindings that allow who: today
// and this month, and by day as far back as the ledger keeps days.
type Spending interface {
	Spend(who Identity) []SpendRow
	SpendByDay(who Identity) []SpendDay
}

func (s *Server) schedules(w http.ResponseWriter, r *http.Request, sess *session) {
	sc, ok := s.backend.(Schedules)
	if !ok {
		s.page(w, http.StatusOK, "message", pageData{Title: "Schedules", Session: sess, Message: "No schedules are configured."})
		return
	}
	list, err := sc.Schedules(r.Context(), sess.who)
	if err != nil {
		s.log.Warn("Listing schedules for the console failed", "error", err)
		http.Error(w, "Could not list the schedules (the log has the details).", http.StatusInternalServerError)
		return
	}
	s.page(w, http.StatusOK, "schedules", pageData{Title: "Schedules", Session: sess, Schedules: list})
}

func (s *Server) pause(w http.ResponseWriter, r *http.Request, sess *session) {
	sc, ok := s.backend.(Schedules)
	if !ok {
		http.NotFound(w, r)
		return
	}
	name, verb := r.PostForm.Get("name"), r.PostForm.Get("verb")
	if verb != "pause" && verb != "resume" {
		http.Error(w, "Bad request: verb must be pause or resume", http.StatusBadRequest)
		return
	}
	if err := sc.SetPaused(r.Context(), sess.who, name, verb == "pause"); err != nil {
		s.fail(w, "Pausing", err)
		return
	}
	http.Redirect(w, r, "/schedules", http.StatusSeeOther)
}

func (s *Server) spend(w http.ResponseWriter, r *http.Request, sess *session) {
	sp, ok := s.backend.(Spending)
	if !ok {
		s.page(w, http.StatusOK, "message", pageData{Title: "Spend", Session: sess, Message: "Spend is not recorded here."})
		return
	}
	s.page(w, http.StatusOK, "spend", pageData{Title: "Spend", Session: sess, Spend: sp.Spend(sess.who), SpendDays: sp.SpendByDay(sess.who)})
}

// AuditFilter narrows the audit trail page.
type AuditFilter struct {
	Conversation string // a key, or its start ("slack/C1")
	User         string // an id or a name
	Kind         string // one kind; "" all
}

// AuditRow is one event of the trail as the page shows it.
type AuditRow struct {
	Time                                           time.Time
	Kind, Conversation, User, Tool, Input, Outcome string
}

// Trail is a Backend's audit trail: the newest events of the bindings
// that allow who, matching f.
type Trail interface {
	Audit(ctx context.Context, who Identity, f AuditFilter) ([]AuditRow, error)
}

func (s *Server) audit(w http.ResponseWriter, r *http.Request, sess *session) {
	tr, ok := s.backend.(Trail)
	if !ok {
		s.page(w, http.StatusOK, "message", pageData{Title: "Audit trail", Session: sess, Message: "The audit trail is off here."})
		return
	}
	q := r.URL.Query()
	f := AuditFilter{Conversation: q.Get("conversation"), User: q.Get("user"), Kind: q.Get("kind")}
	rows, err := tr.Audit(r.Context(), sess.who, f)
	if err != nil {
		s.log.Warn("Reading the audit trail for the console failed", "error", err)
		http.Error(w, "Could not read the audit trail (the log has the details).", http.StatusInternalServerError)
		return
	}
	s.page(w, http.StatusOK, "audit", pageData{Title: "Audit trail", Session: sess, Audit: rows, Filter: f})
}
