package schedule

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

func TestChat(t *testing.T) {
	t.Parallel()
	ledger, err := OpenLedger(filepath.Join(privateDir(t), "ledger.json"))
	if err != nil {
		t.Fatal(err)
	}
	a := schedule(t, "nightly", "30 2 * * *", time.Hour, OverlapSkip)
	b := schedule(t, "elsewhere", "0 9 * * *", time.Hour, OverlapSkip)
	b.Channel = "C2"
	clock := clockwork.NewFakeClockAt(time.Date(2025, 6, 1, 20, 0, 0, 0, time.UTC))
	s, err := New(Options{Schedules: []Schedule{a, b}, Ledger: ledger, Submitter: newFakeSubmitter(), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	admin := Asker{Platform: "slack", Channel: "C1", UserID: "U_ADMIN"}
	user := Asker{Platform: "slack", Channel: "C1", UserID: "U_USER"}
	steps := []struct {
		args string
		who  Asker
		want string
	}{
		{"", user, "Schedules (1):\n• nightly: 30 2 * * * (UTC) → slack/C1, a new thread each run; next run 2025-06-02 02:30 UTC (in 6h 30m)"},
		{"", Asker{Platform: "slack", Channel: "C9"}, "No schedules post in this channel."},
		{"pause elsewhere", admin, `No schedule named "elsewhere" posts in this channel. Schedules here: nightly.`},
		{"pause", admin, "Usage: !schedules"},
		{"pause nightly", admin, "Paused nightly: it does not run until an admin resumes it (!schedules resume nightly)."},
		{"PAUSE nightly", admin, "nightly was already paused."},
		{"", user, "• nightly: 30 2 * * * (UTC) → slack/C1, a new thread each run; paused by U_ADMIN since 2025-06-01 20:00 UTC"},
		{"resume nightly", admin, "Resumed nightly; next run 2025-06-02 02:30 UTC. Runs that passed while it was paused are not caught up."},
		{"resume nightly", admin, "nightly is not paused."},
	}
	for _, st := range steps {
		if got := s.Chat(t.Context(), st.args, st.who); !strings.Contains(got, st.want) {
			t.Errorf("!schedules %s as %s:\n%s\nwant it to contain\n%s", st.args, st.who.UserID, got, st.want)
		}
	}
}
