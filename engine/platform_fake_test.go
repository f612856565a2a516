package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/platform"
)

// recorded is one call the engine made on a fake platform.
type recorded struct {
	Kind   string // send, edit, react, unreact, typing, ask, resolve
	To     platform.Target
	Text   string // message text, reaction name or outcome
	Prompt platform.PermissionPrompt
}

// fakePlatform records what the engine posts. It implements only the
// required Adapter; richPlatform adds every optional interface.
type fakePlatform struct {
	name  string
	files *fakeFiles // for richPlatform's OpenAttachment

	mu      sync.Mutex // guards calls, next, changed and failOn
	calls   []recorded
	next    int
	changed chan struct{}
	failOn  string // a send whose text holds this fails (recorded as "send-failed")
}

func newFakePlatform(name string) *fakePlatform {
	return &fakePlatform{name: name, changed: make(chan struct{})}
}

var _ platform.Adapter = (*fakePlatform)(nil)

func (f *fakePlatform) Name() string { return f.name }

func (f *fakePlatform) Run(ctx context.Context, h platform.Handler) error {
	<-ctx.Done()
	return nil
}

func (f *fakePlatform) record(r recorded) platform.Target {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	f.calls = append(f.calls, r)
	close(f.changed)
	f.changed = make(chan struct{})
	posted := r.To
	if r.Kind == "send" || r.Kind == "ask" {
		posted.MessageID = fmt.Sprintf("posted-%d", f.next)
	}
	return posted
}

func (f *fakePlatform) Send(ctx context.Context, to platform.Target, text string) (platform.Target, error) {
	f.mu.Lock()
	fail := f.failOn != "" && strings.Contains(text, f.failOn)
	f.mu.Unlock()
	if fail {
		f.record(recorded{Kind: "send-failed", To: to, Text: text})
		return platform.Target{}, fmt.Errorf("fake platform: sending %q failed", conv.Quote(text, 40))
	}
	return f.record(recorded{Kind: "send", To: to, Text: text}), nil
}

// snapshot returns the calls so far.
func (f *fakePlatform) snapshot() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.calls...)
}

// waitFor waits until pred holds for the recorded calls, failing the test
// after a deadline. It never sleeps: it wakes on every new call.
func (f *fakePlatform) waitFor(t *testing.T, what string, pred func([]recorded) bool) []recorded {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		calls := append([]recorded(nil), f.calls...)
		ch := f.changed
		f.mu.Unlock()
		if pred(calls) {
			return calls
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; calls so far:\n%s", what, dump(calls))
		}
	}
}

// waitSend waits for a sent message containing sub and returns it.
func (f *fakePlatform) waitSend(t *testing.T, sub string) recorded {
	t.Helper()
	var got recorded
	f.waitFor(t, fmt.Sprintf("a message containing %q", sub), func(calls []recorded) bool {
		for _, c := range calls {
			if c.Kind == "send" && strings.Contains(c.Text, sub) {
				got = c
				return true
			}
		}
		return false
	})
	return got
}

// waitSends waits for n sent messages containing sub (or more).
func (f *fakePlatform) waitSends(t *testing.T, sub string, n int) {
	t.Helper()
	f.waitFor(t, fmt.Sprintf("%d messages containing %q", n, sub), func(calls []recorded) bool {
		got := 0
		for _, c := range calls {
			if c.Kind == "send" && strings.Contains(c.Text, sub) {
				got++
			}
		}
		return got >= n
	})
}

// sends returns the texts sent that contain sub.
func (f *fakePlatform) sends(sub string) []string {
	var out []string
	for _, c := range f.snapshot() {
		if c.Kind == "send" && strings.Contains(c.Text, sub) {
			out = append(out, c.Text)
		}
	}
	return out
}

func (f *fakePlatform) kinds(kind string) []recorded {
	var out []recorded
	for _, c := range f.snapshot() {
		if c.Kind == kind {
			out = append(out, c)
		}
	}
	return out
}

func dump(calls []recorded) string {
	var b strings.Builder
	for _, c := range calls {
		fmt.Fprintf(&b, "  %s %s/%s: %q %+v\n", c.Kind, c.To.Channel, c.To.Thread, c.Text, c.Prompt)
	}
	return b.String()
}

// richPlatform is a fake platform with edits, reactions, typing, buttons
// and a status.
type richPlatform struct {
	*fakePlatform
}

var (
	_ platform.Editor   = richPlatform{}
	_ platform.Reactor  = richPlatform{}
	_ platform.Typer    = richPlatform{}
	_ platform.Prompter = richPlatform{}
	_ platform.Statuser = richPlatform{}

	_ platform.AttachmentOpener = richPlatform{}
)

// fakeFiles are the files a fake platform serves by Ref.
type fakeFiles struct {
	mu     sync.Mutex // guards data and opened
	data   map[string][]byte
	opened map[string]int
}

func (f *fakeFiles) put(ref string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.data[ref] = data
}

func (f *fakeFiles) openedCount(ref string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opened[ref]
}

// OpenAttachment serves the file registered under a.Ref.
func (r richPlatform) OpenAttachment(ctx context.Context, a platform.Attachment) (io.ReadCloser, error) {
	f := r.files
	f.mu.Lock()
	defer f.mu.Unlock()
	data, ok := f.data[a.Ref]
	if !ok {
		return nil, fmt.Errorf("no file %q", a.Ref)
	}
	f.opened[a.Ref]++
	return io.NopCloser(bytes.NewReader(data)), nil
}

func (r richPlatform) Edit(ctx context.Context, msg platform.Target, text string) error {
	r.record(recorded{Kind: "edit", To: msg, Text: text})
	return nil
}

func (r richPlatform) React(ctx context.Context, msg platform.Target, name string) error {
	r.record(recorded{Kind: "react", To: msg, Text: name})
	return nil
}

func (r richPlatform) Unreact(ctx context.Context, msg platform.Target, name string) error {
	r.record(recorded{Kind: "unreact", To: msg, Text: name})
	return nil
}

func (r richPlatform) Typing(ctx context.Context, to platform.Target) error {
	r.record(recorded{Kind: "typing", To: to})
	return nil
}

func (r richPlatform) AskPermission(ctx context.Context, to platform.Target, p platform.PermissionPrompt) (platform.Target, error) {
	return r.record(recorded{Kind: "ask", To: to, Prompt: p}), nil
}

func (r richPlatform) ResolvePermission(ctx context.Context, prompt platform.Target, outcome string) error {
	r.record(recorded{Kind: "resolve", To: prompt, Text: outcome})
	return nil
}

func (r richPlatform) Status() platform.ConnStatus {
	return platform.ConnStatus{State: platform.Connected}
}
