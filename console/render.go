package console

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"time"
)

// The pages are html/template: every value a page shows (chat text, tool
// inputs, names) is escaped for where it goes. Nothing secret goes into
// them: the session cookie is HttpOnly and never rendered; the CSRF token
// is the session's own anti-forgery value, useless without the cookie.
var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"ago": ago,
	"age": func(d time.Duration) string {
		if d < time.Second {
			return "just now"
		}
		return d.Round(time.Second).String() + " ago"
	},
	"cost": func(f float64) string { return fmt.Sprintf("$%.2f", f) },
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.UTC().Format("2006-01-02 15:04 UTC")
	},
}).ParseFS(webFS, "web/templates/*.html"))

// pageData is what a page template gets.
type pageData struct {
	Title   string
	Message string
	Session *session
	Groups  []group
	Conv    *Conversation
	Live    *liveView
	Changes *changesView // the last turn's, on the conversation page
	Notice  string       // how the person's last press there ended
	// The schedules and spend pages.
	Schedules []Schedule
	Spend     []SpendRow
	SpendDays []SpendDay
	Audit     []AuditRow
	Filter    AuditFilter
	Cluster   *ClusterView
	Now       time.Time
}

// Who is the signed-in person, for the header.
func (p pageData) Who() string {
	if p.Session == nil {
		return ""
	}
	return p.Session.who.Name()
}

// CSRF is the session's anti-forgery token for the page's forms.
func (p pageData) CSRF() string {
	if p.Session == nil {
		return ""
	}
	return p.Session.csrf
}

// page renders the template name into a buffer first, so that a template
// error is a 500 and never half a page.
func (s *Server) page(w http.ResponseWriter, status int, name string, d pageData) {
	d.Now = s.now()
	var b bytes.Buffer
	if err := renderPage(&b, name, d); err != nil {
		s.log.Error("Rendering a console page failed", "page", name, "error", err)
		http.Error(w, "Internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

func renderPage(w io.Writer, name string, d pageData) error {
	return pages.ExecuteTemplate(w, name, d)
}

func ago(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := time.Since(t).Round(time.Second)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return fmt.Sprintf("%d days ago", int(d.Hours()/24))
}
