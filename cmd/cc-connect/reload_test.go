package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/engine"
	"github.com/cc-connect/cc-connect/internal/testlog"
)

// fakeTarget records what a reloader asks of the engine.
type fakeTarget struct {
	mu      sync.Mutex // guards the fields below
	reloads []engine.Reload
	notices []string
	changed chan struct{}
}

func newFakeTarget() *fakeTarget { return &fakeTarget{changed: make(chan struct{})} }

func (f *fakeTarget) Reload(ctx context.Context, r engine.Reload) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reloads = append(f.reloads, r)
	close(f.changed)
	f.changed = make(chan struct{})
	return nil
}

func (f *fakeTarget) NotifyAdmins(ctx context.Context, text string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notices = append(f.notices, text)
	return []string{"tg"}
}

func (f *fakeTarget) snapshot() ([]engine.Reload, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]engine.Reload(nil), f.reloads...), append([]string(nil), f.notices...)
}

// waitReloads waits until the engine was reloaded n times.
func (f *fakeTarget) waitReloads(t *testing.T, n int) []engine.Reload {
	t.Helper()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		got, ch := append([]engine.Reload(nil), f.reloads...), f.changed
		f.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for reload %d", n)
		}
	}
}

const reloadBase = `
[agent]
command = "true"

[[platforms]]
name = "tg"
type = "telegram"
token = "111:aaa"

[[platforms]]
name = "tg2"
type = "telegram"
token = "222:bbb"

[[bindings]]
platform = "tg"
channel = "C1"
workspace = "ws"
allow_users = ["alice"]
admins = ["alice"]

[[bindings]]
platform = "tg2"
workspace = "ws"
allow_users = ["*"]
`

// newTestReloader writes text as a config next to a workspace "ws" and
// returns a reloader running it against a fake engine.
func newTestReloader(t *testing.T, text string) (*reloader, *fakeTarget, *testlog.Buffer, string) {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"ws", "ws2"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "config.toml")
	writeFile(t, path, text)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	logs := &testlog.Buffer{}
	log, level := newLevelLogger(config.Log{Level: "debug", Format: "json"}, logs)
	level.Set(slog.LevelDebug)
	locks := &instanceLocks{}
	taken, err := locks.take(cfg.Platforms)
	if err != nil {
		t.Fatal(err)
	}
	locks.swap(taken, nil)
	t.Cleanup(locks.release)
	ft := newFakeTarget()
	r := &reloader{log: log, level: level, eng: ft, locks: locks, running: cfg,
		deps: adapterDeps{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Log: log}}
	return r, ft, logs, path
}

// uniqueTokens makes the bot tokens of a test its own: token locks are
// per host, and tests run in parallel.
func uniqueTokens(t *testing.T, text string) string {
	id := fmt.Sprintf("%d", time.Now().UnixNano())
	return strings.NewReplacer(`"111:aaa"`, `"111:aaa`+id+`"`, `"222:bbb"`, `"222:bbb`+id+`"`,
		`"111:new"`, `"111:new`+id+`"`).Replace(text)
}

// writeFile replaces path by writing a new file and renaming it over the
// old one, as vim and most IDEs save.
func writeFile(t *testing.T, path, text string) {
	t.Helper()
	tmp := path + ".tmp~"
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestReloadApplies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		edit    func(string) string
		adapter []string // adapters rebuilt
		remove  []string
		check   func(t *testing.T, r engine.Reload, logs *testlog.Buffer)
	}{
		{
			name:    "token change restarts only that adapter",
			edit:    func(s string) string { return strings.Replace(s, `"111:aaa`, `"111:new`, 1) },
			adapter: []string{"tg"},
		},
		{
			name: "allow list change",
			edit: func(s string) string {
				return strings.Replace(s, `allow_users = ["alice"]`, `allow_users = ["alice", "bob"]`, 1)
			},
			check: func(t *testing.T, r engine.Reload, logs *testlog.Buffer) {
				if got := r.Bindings[0].AllowUsers; len(got) != 2 || got[1] != "bob" {
					t.Errorf("bindings[0].allow_users = %v", got)
				}
			},
		},
		{
			name: "new binding",
			edit: func(s string) string {
				return s + "\n[[bindings]]\nplatform = \"tg\"\nchannel = \"C9\"\nworkspace = \"ws2\"\nallow_users = [\"*\"]\n"
			},
			check: func(t *testing.T, r engine.Reload, logs *testlog.Buffer) {
				if len(r.Bindings) != 3 || r.Bindings[2].Channel != "C9" || !strings.HasSuffix(r.Bindings[2].Workspace, "ws2") {
					t.Errorf("bindings = %+v", r.Bindings)
				}
			},
		},
		{
			name: "platform removed with its binding",
			edit: func(s string) string {
				s = strings.Replace(s, "[[platforms]]\nname = \"tg2\"\ntype = \"telegram\"\ntoken = \"222:bbb", "#", 1)
				return s[:strings.LastIndex(s, "[[bindings]]")]
			},
			remove: []string{"tg2"},
			check: func(t *testing.T, r engine.Reload, logs *testlog.Buffer) {
				if len(r.Bindings) != 1 {
					t.Errorf("bindings = %+v", r.Bindings)
				}
			},
		},
		{
			name: "chat keys apply live; files keys stay as started",
			edit: func(s string) string {
				return "[chat]\nnotify_after = \"7m\"\nthread_context_messages = 3\n[files]\nsend_file_max_size = \"1MiB\"\n" + s
			},
			check: func(t *testing.T, r engine.Reload, logs *testlog.Buffer) {
				if r.Team == nil || r.Team.NotifyAfter != 7*time.Minute || r.Team.ThreadContext.Messages != 3 {
					t.Fatalf("reloaded [chat] settings: %+v", r.Team)
				}
				if r.Team.SendFileMaxBytes == 1<<20 {
					t.Errorf("files.send_file_max_size applied by reload; it needs a restart")
				}
				if recs := logs.Records("Config change needs a restart to apply"); len(recs) != 1 || recs[0]["key"] != "files.send_file_max_size" {
					t.Errorf("restart keys logged: %v", recs)
				}
			},
		},
		{
			name: "restart-only keys are reported, the rest applies",
			edit: func(s string) string {
				s = strings.Replace(s, "[agent]\n", "[state]\ndir = \"elsewhere\"\n[log]\nlevel = \"debug\"\n[agent]\nmodel = \"opus\"\n", 1)
				return strings.Replace(s, `admins = ["alice"]`, `admins = []`, 1)
			},
			check: func(t *testing.T, r engine.Reload, logs *testlog.Buffer) {
				var keys []string
				for _, rec := range logs.Records("Config change needs a restart to apply") {
					keys = append(keys, rec["key"].(string))
				}
				// The audit trail's default path moves with state.dir.
				if strings.Join(keys, " ") != "state.dir agent.model audit.path" {
					t.Errorf("restart keys logged: %v", keys)
				}
				if len(r.Bindings[0].Admins) != 0 {
					t.Errorf("the admins change was not applied: %+v", r.Bindings[0])
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			base := uniqueTokens(t, reloadBase)
			r, ft, logs, path := newTestReloader(t, base)
			writeFile(t, path, uniqueTokens(t, tt.edit(base)))
			r.reload(context.Background(), "test")
			reloads, notices := ft.snapshot()
			if len(reloads) != 1 || len(notices) != 0 {
				t.Fatalf("%d reloads, notices %q; errors logged: %v", len(reloads), notices, logs.Records("Config reload failed; the running config stays"))
			}
			var names []string
			for _, a := range reloads[0].Adapters {
				names = append(names, a.Name())
			}
			if fmt.Sprint(names) != fmt.Sprint(tt.adapter) || fmt.Sprint(reloads[0].Remove) != fmt.Sprint(tt.remove) {
				t.Errorf("adapters rebuilt %v, removed %v; want %v, %v", names, reloads[0].Remove, tt.adapter, tt.remove)
			}
			if len(logs.Records("Config change applied")) == 0 {
				t.Error("no summary of the applied change was logged")
			}
			if tt.check != nil {
				tt.check(t, reloads[0], logs)
			}
			// The next reload compares with what runs now: nothing to do.
			r.reload(context.Background(), "again")
			if reloads, _ := ft.snapshot(); len(reloads) != 1 {
				t.Errorf("an unchanged file reloaded the engine again")
			}
		})
	}
}

func TestReloadInvalidEditKeepsTheRunningConfig(t *testing.T) {
	t.Parallel()
	base := uniqueTokens(t, reloadBase)
	r, ft, logs, path := newTestReloader(t, base)
	before := r.running
	bad := strings.Replace(base, `workspace = "ws"`, `workspace = "missing"`, 1)
	writeFile(t, path, bad)
	r.reload(context.Background(), "test")
	r.reload(context.Background(), "again")

	reloads, notices := ft.snapshot()
	if len(reloads) != 0 {
		t.Fatalf("the engine was reloaded with an invalid config: %+v", reloads)
	}
	if r.running != before {
		t.Error("the running config was replaced")
	}
	recs := logs.Records("Config reload failed; the running config stays")
	if len(recs) != 2 || recs[0]["key"] != "bindings[0].workspace" || recs[0]["level"] != "ERROR" ||
		!strings.Contains(recs[0]["error"].(string), "does not exist") {
		t.Errorf("error records = %v", recs)
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "bindings[0].workspace") ||
		!strings.Contains(notices[0], "keeps running the previous config") {
		t.Errorf("admins were told %q, want one notice naming the key", notices)
	}

	// Fixed, then broken again: the admins hear of the new failure.
	writeFile(t, path, base)
	r.reload(context.Background(), "fixed")
	writeFile(t, path, strings.Replace(base, `allow_users = ["*"]`, `allow_users = "*"`, 1))
	r.reload(context.Background(), "broken again")
	_, notices = ft.snapshot()
	if len(notices) != 2 || !strings.Contains(notices[1], "bindings[1].allow_users") {
		t.Errorf("notices %q", notices)
	}
}

// eventLog is an activity sink that keeps what it is given.
type eventLog struct {
	mu  sync.Mutex // guards got
	got []activity.Event
}

func (l *eventLog) Record(e activity.Event) {
	l.mu.Lock()
	l.got = append(l.got, e)
	l.mu.Unlock()
}

func (l *eventLog) all() []activity.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

// TestReloadFailureIsRecorded: each reload that fails is one "reloaded"
// event with the outcome "failed: " and what failed, by key, through the
// run's feed, which redacts a secret the error quotes (here a bot token
// pasted into a workspace path); admins are told once, the trail has
// every attempt.
func TestReloadFailureIsRecorded(t *testing.T) {
	t.Parallel()
	base := uniqueTokens(t, reloadBase)
	r, ft, _, path := newTestReloader(t, base)
	feed, redact := newFeed(r.running)
	r.redact, r.activity = redact, feed
	var events eventLog
	feed.Subscribe(&events)
	token := r.running.Platforms[0].Token.Reveal()
	writeFile(t, path, strings.Replace(base, `workspace = "ws"`, `workspace = "missing-`+token+`"`, 1))
	r.reload(context.Background(), "test")
	r.reload(context.Background(), "again")

	got := events.all()
	if len(got) != 2 {
		t.Fatalf("events %+v, want one per failed reload", got)
	}
	for _, e := range got {
		if e.Kind != activity.Reloaded || e.Time.IsZero() ||
			!strings.HasPrefix(e.Outcome, "failed: bindings[0].workspace: ") || !strings.Contains(e.Outcome, "does not exist") {
			t.Errorf("event %+v, want reloaded, failed at bindings[0].workspace", e)
		}
		if strings.Contains(e.Outcome, token) || !strings.Contains(e.Outcome, "missing-[redacted]") {
			t.Errorf("the token is not redacted: %q", e.Outcome)
		}
	}
	if _, notices := ft.snapshot(); len(notices) != 1 {
		t.Errorf("admins told %d times, want once", len(notices))
	}
	// A good file again: the engine records that reload, not the reloader.
	writeFile(t, path, base)
	r.reload(context.Background(), "fixed")
	if n := len(events.all()); n != 2 {
		t.Errorf("%d events after a good reload, want still 2", n)
	}
}

func TestReloadTOMLSyntaxError(t *testing.T) {
	t.Parallel()
	base := uniqueTokens(t, reloadBase)
	r, ft, logs, path := newTestReloader(t, base)
	writeFile(t, path, base+"\n[[bindings]\n")
	r.reload(context.Background(), "test")
	if reloads, notices := ft.snapshot(); len(reloads) != 0 || len(notices) != 1 {
		t.Errorf("%d reloads, %d notices; want 0 and 1", len(reloads), len(notices))
	}
	if recs := logs.Records("Config reload failed; the running config stays"); len(recs) != 1 ||
		!strings.Contains(recs[0]["error"].(string), "config.toml:") {
		t.Errorf("records %v: want the file and line", recs)
	}
}

func TestReloadLogLevelAppliesLive(t *testing.T) {
	t.Parallel()
	base := uniqueTokens(t, reloadBase)
	r, _, _, path := newTestReloader(t, base)
	writeFile(t, path, "[log]\nlevel = \"error\"\n"+base)
	r.reload(context.Background(), "test")
	if got := r.level.Level(); got != slog.LevelError {
		t.Errorf("level = %v, want ERROR", got)
	}
}

func TestWatchReloadsOnRenameAndSIGHUP(t *testing.T) {
	t.Parallel()
	base := uniqueTokens(t, reloadBase)
	r, ft, logs, path := newTestReloader(t, base)
	ctx, cancel := context.WithCancel(context.Background())
	hup := make(chan os.Signal, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.watch(ctx, hup)
	}()
	defer func() { cancel(); <-done }()

	// Logged once the folder is watched: a save before that is not seen.
	logs.WaitRecord(t, time.Minute, "Watching the config file", "path", path)
	writeFile(t, path, strings.Replace(base, `allow_users = ["alice"]`, `allow_users = ["alice", "bob"]`, 1))
	got := ft.waitReloads(t, 1)
	if u := got[0].Bindings[0].AllowUsers; len(u) != 2 {
		t.Errorf("allow_users after the rename = %v", u)
	}

	hup <- os.Interrupt // any value: the channel is what signal.Notify feeds
	logs.WaitRecord(t, time.Minute, "Reloading the config", "trigger", "SIGHUP")
}

// TestRunReloadsTheConfigFile: a running cc-connect applies a config saved
// by rename, keeps running the old config after an invalid edit (naming the
// key in its log), and the allow list it applied refuses the next message.
func TestRunReloadsTheConfigFile(t *testing.T) {
	t.Parallel()
	path := setup(t, "")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	orig := string(data)
	p := startBinary(t, "run", "--config", path)
	p.waitErr(t, "Watching the config file")

	writeFile(t, path, strings.Replace(orig, `workspace = "ws"`, `workspace = "missing"`, 1))
	p.waitErr(t, "key=bindings[0].workspace")
	p.write(t, "still served\n")
	p.waitOut(t, "echo: still served")

	writeFile(t, path, strings.Replace(orig, `allow_users = ["*"]`, `allow_users = ["somebody-else"]`, 1))
	p.waitErr(t, "Config change applied")
	p.write(t, "now refused\n")
	out := p.waitOut(t, "not allowed")
	p.stdin.Close()
	if code := p.exitCode(t); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for line := range p.out {
		out = append(out, line)
	}
	if strings.Contains(strings.Join(out, "\n"), "echo: now refused") {
		t.Error("a user removed from allow_users reached the agent")
	}
	stderr := p.stderr.String()
	if !strings.Contains(stderr, "binding tty/* changed (allow_users)") {
		t.Errorf("no one-line summary of the change:\n%s", stderr)
	}
}

// TestReloadRenamedPlatformKeepsItsTokenLock: renaming a platform keeps its
// bot token; the lock this process holds moves with it rather than being
// found held.
func TestReloadRenamedPlatformKeepsItsTokenLock(t *testing.T) {
	t.Parallel()
	base := uniqueTokens(t, reloadBase)
	r, ft, logs, path := newTestReloader(t, base)
	writeFile(t, path, strings.ReplaceAll(base, `"tg2"`, `"tg3"`))
	r.reload(context.Background(), "test")
	reloads, _ := ft.snapshot()
	if len(reloads) != 1 {
		t.Fatalf("%d reloads; errors: %v", len(reloads), logs.Records("Config reload failed; the running config stays"))
	}
	if len(reloads[0].Adapters) != 1 || reloads[0].Adapters[0].Name() != "tg3" || fmt.Sprint(reloads[0].Remove) != "[tg2]" {
		t.Errorf("reload = %+v", reloads[0])
	}
	r.locks.mu.Lock()
	defer r.locks.mu.Unlock()
	if r.locks.tokens["tg3"] == nil || r.locks.tokens["tg2"] != nil {
		t.Errorf("token locks by platform: %v", r.locks.tokens)
	}
}
