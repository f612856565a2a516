package webhook

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLateReplayIsRefused: a captured GitHub delivery (the fixture's body,
// dated 2020) replayed once the engine's seen window has passed, with a
// new delivery id, after a restart, or a month later, runs no second
// time: the replay record remembers it beyond the window.
func TestLateReplayIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0, ciHook(t))
	f.sub.window = time.Minute // state.seen_window = "1m"
	body := payload(t, "failure")
	if !bytes.Contains(body, []byte(`"created_at": "2020-`)) {
		t.Fatal("the fixture is not the 2020 delivery")
	}
	if code, ans := f.post("ci-failed", body, github(body, "first")); code != http.StatusAccepted {
		t.Fatalf("the delivery: %d %v", code, ans)
	}
	f.clock.add(74 * time.Second) // the engine forgot the run's id
	for _, replay := range []struct {
		name    string
		before  func()
		headers map[string]string
	}{
		{"74 s later", func() {}, github(body, "first")},
		{"with a new delivery id", func() {}, github(body, "forged-new-id")},
		{"after a restart", f.restart, github(body, "first")},
		{"a month later", func() { f.clock.add(30 * 24 * time.Hour) }, github(body, "first")},
	} {
		replay.before()
		code, ans := f.post("ci-failed", body, replay.headers)
		if code != http.StatusOK || ans["status"] != "duplicate" || ans["detail"] != RunID("ci-failed", body) {
			t.Errorf("replayed %s: %d %v, want 200 duplicate", replay.name, code, ans)
		}
	}
	if n := len(f.sub.taken()); n != 1 {
		t.Errorf("the body ran %d times, want once", n)
	}
}

// TestEventHeaderIsNotTrusted: GitHub does not sign X-GitHub-Event, so it
// decides nothing. A signed body runs as what its content is, once: sent
// again with another event header it is a replay, and the run it made
// carries no header's event.
func TestEventHeaderIsNotTrusted(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0, ciHook(t))
	body := payload(t, "failure")
	sendAs := func(event, delivery string) (int, map[string]string) {
		h := github(body, delivery)
		h["X-GitHub-Event"] = event
		return f.post("ci-failed", body, h)
	}
	if code, ans := sendAs("push", "d1"); code != http.StatusAccepted || ans["status"] != "accepted" {
		t.Fatalf("the body sent as a push: %d %v, want it run for what it is", code, ans)
	}
	for _, event := range []string{"workflow_run", "issues", "ping"} {
		if code, ans := sendAs(event, "d2"); code != http.StatusOK || ans["status"] != "duplicate" {
			t.Errorf("the body sent again as %s: %d %v, want 200 duplicate", event, code, ans)
		}
	}
	runs := f.sub.taken()
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	if r := runs[0]; r.Header != "Webhook: ci-failed" || strings.Contains(r.Prompt, "push") {
		t.Errorf("the run speaks of the unsigned event header: %q\n%s", r.Header, r.Prompt)
	}
}

// genericHook is a hook whose sender signs a timestamp and the body.
func genericHook(t *testing.T) Hook {
	return Hook{Name: "deploys", Secret: []byte("another-secret-for-deploys"), Sender: SenderGeneric, Platform: "slack", Channel: "C0123",
		Prompt: "A deploy finished: check it.", Template: mustTemplate(t, "Deploy {{.id}}: {{.status}}")}
}

func TestGenericSender(t *testing.T) {
	t.Parallel()
	h := genericHook(t)
	f := newFixture(t, 0, h)
	now := f.clock.now()
	signed := func(body string, at time.Time) map[string]string {
		stamp, sig := SignGeneric(h.Secret, []byte(body), at)
		return map[string]string{HeaderTimestamp: stamp, HeaderGeneric: sig}
	}
	with := func(m map[string]string, k, v string) map[string]string {
		out := map[string]string{}
		for key, val := range m {
			out[key] = val
		}
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		body    string
		headers map[string]string
		code    int
	}{
		{"signed now", `{"id":1,"status":"ok"}`, signed(`{"id":1,"status":"ok"}`, now), http.StatusAccepted},
		{"signed within the skew", `{"id":2,"status":"ok"}`, signed(`{"id":2,"status":"ok"}`, now.Add(-MaxSkew+time.Second)), http.StatusAccepted},
		{"a clock a little ahead", `{"id":3,"status":"ok"}`, signed(`{"id":3,"status":"ok"}`, now.Add(MaxSkew-time.Second)), http.StatusAccepted},
		{"bare hex", `{"id":4,"status":"ok"}`, func() map[string]string {
			m := signed(`{"id":4,"status":"ok"}`, now)
			m[HeaderGeneric] = strings.TrimPrefix(m[HeaderGeneric], "sha256=")
			return m
		}(), http.StatusAccepted},
		{"signed too long ago", `{"id":5,"status":"ok"}`, signed(`{"id":5,"status":"ok"}`, now.Add(-MaxSkew-time.Second)), http.StatusUnauthorized},
		{"signed too far ahead", `{"id":6,"status":"ok"}`, signed(`{"id":6,"status":"ok"}`, now.Add(MaxSkew+time.Second)), http.StatusUnauthorized},
		{"a timestamp changed after signing", `{"id":7,"status":"ok"}`,
			with(signed(`{"id":7,"status":"ok"}`, now.Add(-time.Hour)), HeaderTimestamp, fmt.Sprint(now.Unix())), http.StatusUnauthorized},
		{"no timestamp", `{"id":8,"status":"ok"}`, with(signed(`{"id":8,"status":"ok"}`, now), HeaderTimestamp, ""), http.StatusUnauthorized},
		{"the body alone signed", `{"id":9,"status":"ok"}`,
			map[string]string{HeaderTimestamp: fmt.Sprint(now.Unix()), HeaderGeneric: Sign(h.Secret, []byte(`{"id":9,"status":"ok"}`))}, http.StatusUnauthorized},
		{"GitHub's header", `{"id":10,"status":"ok"}`, map[string]string{HeaderGitHub: Sign(h.Secret, []byte(`{"id":10,"status":"ok"}`))}, http.StatusUnauthorized},
	} {
		if code, ans := f.post("deploys", []byte(tc.body), tc.headers); code != tc.code {
			t.Errorf("%s: %d %v, want %d", tc.name, code, ans, tc.code)
		}
	}
	if n := len(f.sub.taken()); n != 4 {
		t.Fatalf("%d runs, want the 4 signed in time", n)
	}

	// A replay within the skew, and the sender's own retry signed anew,
	// are the same body: it ran already. Past the skew a replay is not
	// signed in time any more, also after a restart that forgot it.
	body := `{"id":1,"status":"ok"}`
	first := signed(body, now)
	f.sub.window = time.Second // the engine forgot it long ago
	f.clock.add(2 * time.Minute)
	for name, headers := range map[string]map[string]string{"replayed": first, "signed again": signed(body, f.clock.now())} {
		if code, ans := f.post("deploys", []byte(body), headers); code != http.StatusOK || ans["status"] != "duplicate" {
			t.Errorf("%s within the skew: %d %v, want 200 duplicate", name, code, ans)
		}
	}
	f.clock.add(MaxSkew)
	f.restart()
	if code, ans := f.post("deploys", []byte(body), first); code != http.StatusUnauthorized {
		t.Errorf("replayed past the skew: %d %v, want 401", code, ans)
	}
	if n := len(f.sub.taken()); n != 4 {
		t.Errorf("%d runs, want still 4", n)
	}
}

// TestRecordFailureAsksForARetry: a run journaled whose body could not be
// recorded is answered 503, so that the sender's retry (a duplicate for
// the engine) records it; a late replay then runs nothing.
func TestRecordFailureAsksForARetry(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0, ciHook(t))
	f.sub.window = time.Minute
	body := payload(t, "failure")
	if err := f.srv.replays.Close(); err != nil { // every write fails now
		t.Fatal(err)
	}
	code, ans := f.post("ci-failed", body, github(body, "d"))
	if code != http.StatusServiceUnavailable || ans["status"] != "retry" {
		t.Fatalf("an unrecorded run: %d %v, want 503 retry", code, ans)
	}
	f.logs.WaitRecords(t, 5*time.Second, "Webhook body not recorded as run; answering 503 so that the sender retries", 1)
	f.restart()
	if code, ans := f.post("ci-failed", body, github(body, "d")); code != http.StatusOK || ans["status"] != "duplicate" {
		t.Fatalf("the sender's retry: %d %v, want 200 duplicate", code, ans)
	}
	f.clock.add(time.Hour)
	if code, ans := f.post("ci-failed", body, github(body, "d")); code != http.StatusOK || ans["status"] != "duplicate" {
		t.Errorf("a late replay: %d %v, want 200 duplicate", code, ans)
	}
	if n := len(f.sub.taken()); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
}

// TestReplays: the record is private, survives a reopen, forgets the
// oldest bodies past its bound and a generic body once its skew passed,
// stays compact, and survives a torn or garbled line.
func TestReplays(t *testing.T) {
	t.Parallel()
	dir := privateDir(t)
	path := ReplaysPath(dir)
	c := &clock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
	r, err := openReplays(path, c.now, 3)
	if err != nil {
		t.Fatal(err)
	}
	body := func(i int) []byte { return fmt.Appendf(nil, `{"n":%d}`, i) }
	add := func(r *Replays, i int, until time.Time) int {
		t.Helper()
		n, err := r.Add("h", body(i), until)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i := range 3 {
		if n := add(r, i, time.Time{}); n != 0 {
			t.Fatalf("body %d forgot %d", i, n)
		}
	}
	if !r.Seen("h", body(0)) || r.Seen("other-hook", body(0)) || r.Seen("h", body(9)) {
		t.Error("Seen answers wrongly")
	}
	if n := add(r, 3, time.Time{}); n != 1 {
		t.Errorf("a fourth body over a bound of 3 forgot %d, want 1", n)
	}
	if r.Seen("h", body(0)) || !r.Seen("h", body(3)) {
		t.Error("the oldest body was not the one forgotten")
	}
	for name, p := range map[string]string{"file": path, "folder": filepath.Dir(path)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]os.FileMode{"file": 0o600, "folder": 0o700}[name]; fi.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", name, fi.Mode().Perm(), want)
		}
	}
	data, _ := os.ReadFile(path)
	if bytes.Contains(data, []byte(`"n"`)) {
		t.Errorf("the record holds a body:\n%s", data)
	}

	// A generic body is remembered until its skew passes.
	if n := add(r, 4, c.now().Add(time.Minute)); n != 1 {
		t.Errorf("forgot %d, want 1", n)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Add("h", body(5), time.Time{}); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Add after Close: %v", err)
	}
	// A crash mid-append and a garbled line lose those lines only.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("garbage\n{\"k\":\"cut")
	f.Close()
	r, err = openReplays(path, c.now, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, false, true, true, true} {
		if got := r.Seen("h", body(i)); got != want {
			t.Errorf("after reopening, body %d seen %t, want %t", i, got, want)
		}
	}
	c.add(time.Minute)
	if r.Seen("h", body(4)) {
		t.Error("a generic body is remembered past its skew")
	}
	// Many adds keep the file near its bound.
	for i := 10; i < 3000; i++ {
		add(r, i, time.Time{})
	}
	data, _ = os.ReadFile(path)
	if lines := bytes.Count(data, []byte("\n")); lines > 2*3+1024 {
		t.Errorf("the file holds %d lines for 3 bodies", lines)
	}
	_ = r.Close()
}
