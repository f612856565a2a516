package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// tinyStateDir mounts a small tmpfs as a state dir, so that a test can
// fill it as a disk fills. It needs root; without it the test is skipped
// (the inbox package's injected-writer tests cover the same ground).
func tinyStateDir(t *testing.T) string {
	t.Helper()
	testenv.NeedRoot(t, "mounting a small tmpfs; inbox's injected-writer tests cover full disks without it")
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=256k,mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting the test tmpfs: %v", err)
		}
	})
	return dir
}

// fillDisk writes a file in dir until the file system is full, and
// returns a function that frees the space again.
func fillDisk(t *testing.T, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	// Byte-sized writes fill the last partial page too.
	for {
		if _, err := f.Write(chunk[:1]); err != nil {
			break
		}
	}
	f.Close()
	return func() {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDiskFullLosesOnlyTheMessageThatFailed: on a full disk a message
// whose journal record cannot be written is refused with a notice that
// says so (and names no path); the messages accepted before it, and the
// one accepted once there is room again, run after a restart. Before,
// the torn record stayed in the journal, the next one was glued to it,
// and after the restart the conversation refused everything.
func TestDiskFullLosesOnlyTheMessageThatFailed(t *testing.T) {
	state := tinyStateDir(t)
	h := newHarness(t, func(o *Options, _ *harnessConfig) { o.StateDir = state })
	h.say("alice", "T1", "first [[WAIT]]")
	h.fa.waitFor(t, "the first turn to run", func(fa *fakeAgents) bool { return fa.waiting == 1 })
	h.say("alice", "T1", "second")
	h.rec.waitSend(t, "Queued (position 1)")

	free := fillDisk(t, state)
	big := "third " + strings.Repeat("a line of a pasted log\n", 700) // ~16 KB: several pages
	h.say("alice", "T1", big)
	notice := h.rec.waitSend(t, "This message could not be saved")
	if want := "the disk that holds cc-connect's state is full"; !strings.Contains(notice.Text, want) {
		t.Errorf("notice %q does not say %q", notice.Text, want)
	}
	if strings.Contains(notice.Text, state) {
		t.Errorf("notice names the state dir: %q", notice.Text)
	}
	journal, err := os.ReadFile(conv.InboxPath(h.opts.StateDir, t1Key))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range bytes.SplitAfter(journal, []byte("\n")) {
		if len(l) > 0 && (!json.Valid(bytes.TrimSuffix(l, []byte("\n"))) || l[len(l)-1] != '\n') {
			t.Fatalf("journal line %d is torn after the failed write: %.80q", i+1, l)
		}
	}

	free()
	h.say("alice", "T1", "fourth")
	h.rec.waitSend(t, "Queued (position 2)")
	h.stop() // "first" ends; "second" and "fourth" stay in the journal

	h = h.restart()
	h.rec.waitSend(t, "echo: second")
	h.rec.waitSend(t, "echo: fourth")
	h.waitIdle()
	if got := h.rec.sends("refuses"); len(got) != 0 {
		t.Errorf("the conversation failed closed after the restart: %q", got)
	}
	if got := h.rec.sends("echo: third"); len(got) != 0 {
		t.Errorf("the message that was not saved ran: %d replies", len(got))
	}
	if got := h.logs.Records("Inbox journal repaired on open"); len(got) != 0 {
		t.Errorf("the journal needed repairs: %v", got)
	}
}

// TestMessageSizeCaps: a message up to the journal's cap (8 MiB as saved)
// is accepted and, being over files.artifact_threshold, reaches Claude as
// an artifact saved whole; one over the cap is refused with its size and
// the cap, and told to come as a file, not told "0 messages waiting".
func TestMessageSizeCaps(t *testing.T) {
	h := newHarness(t, nil)
	under := "under " + strings.Repeat("0123456789abcdef", (inbox.DefaultMaxBytes-4096)/16)
	h.say("alice", "T1", under)
	saved := h.rec.waitSend(t, "so it was saved whole as")
	if !strings.Contains(saved.Text, "Your message is long (8.0 MB)") {
		t.Errorf("artifact notice %q, want the size", saved.Text)
	}
	rel := strings.Fields(saved.Text[strings.Index(saved.Text, "saved whole as ")+len("saved whole as "):])[0]
	data, err := os.ReadFile(filepath.Join(h.e.routes.pool.normalize(h.ws), rel))
	if err != nil || string(data) != under {
		t.Errorf("artifact %s holds %d bytes (%v), want the whole message (%d)", rel, len(data), err, len(under))
	}
	h.rec.waitSend(t, "echo: ")
	h.waitIdle()

	over := strings.Repeat("x", inbox.DefaultMaxBytes+1<<20)
	h.say("alice", "T1", over)
	refusal := h.rec.waitSend(t, "too large")
	if want := "This message is too large: 9.0 MB, the limit is 8.0 MB; send it as a file."; refusal.Text != want {
		t.Errorf("refusal = %q, want %q", refusal.Text, want)
	}
	if got := h.rec.sends("messages waiting"); len(got) != 0 {
		t.Errorf("told about waiting messages: %q", got)
	}
	h.waitIdle()
	if n := len(h.fa.spawnsSnapshot()); n != 1 {
		t.Errorf("%d agent processes, want the refused message never to reach one", n)
	}
}

// TestMessageOverTheJournalsRoom: a message that fits the cap alone but
// not next to the messages already held is refused with the sizes, and
// runs once sent again after they are done.
func TestMessageOverTheJournalsRoom(t *testing.T) {
	h := newHarness(t, nil)
	chunk := strings.Repeat("0123456789abcdef", 3<<20/16) // 3.0 MB
	h.say("alice", "T1", "first [[WAIT]] "+chunk)
	h.fa.waitFor(t, "the first turn to run", func(fa *fakeAgents) bool { return fa.waiting == 1 })
	h.say("alice", "T1", "second "+chunk)
	h.rec.waitSend(t, "Queued (position 1)")
	third := h.message("alice", "T1", "third "+chunk)
	h.deliver(third)
	refusal := h.rec.waitSend(t, "does not fit")
	want := "This message (3.0 MB) does not fit in this conversation's journal next to the 2 messages it holds (6.0 MB of its 8.0 MB)"
	if !strings.HasPrefix(refusal.Text, want) {
		t.Errorf("refusal = %q, want it to start %q", refusal.Text, want)
	}
	h.fa.release(t)
	h.waitIdle()
	third.ID += "-again" // sent again: a new platform message
	h.deliver(third)
	h.waitIdle()
	// Each went to Claude as an artifact; the excerpts tell them apart.
	var got []string
	for _, turn := range h.fa.history(sess1) {
		got = append(got, strings.Fields(turn[strings.Index(turn, "<excerpt>\n")+len("<excerpt>\n"):])[0])
	}
	if strings.Join(got, ",") != "first,second,third" {
		t.Errorf("Claude got %q, want first, second, then third sent again", got)
	}
}
