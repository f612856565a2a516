package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/engine/procs"
)

// TestAgentPidFileLinkIsNotFollowed: a symbolic link planted where the
// pid file of a session's claude process goes, pointing at a file that
// names a live process, kills nothing and changes nothing it points to:
// the next holder of the session removes the link, and the pid file it
// writes is a regular file of its own.
func TestAgentPidFileLinkIsNotFollowed(t *testing.T) {
	if _, ok := procs.ProcStart(os.Getpid()); !ok {
		t.Skip("no /proc: orphans are not detected here")
	}
	bystander := exec.Command("sleep", "60")
	bystander.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bystander.Process.Kill(); _ = bystander.Wait() })
	st, _ := procs.ProcStart(bystander.Process.Pid)
	victimText := strconv.Itoa(bystander.Process.Pid) + " " + st + "\n"
	victim := t.TempDir() + "/precious"
	if err := os.WriteFile(victim, []byte(victimText), 0o600); err != nil {
		t.Fatal(err)
	}

	h, _ := newRealHarness(t, nil, nil)
	h.say("alice", "T1", "hello")
	h.rec.waitSend(t, "echo: hello")
	h.waitIdle()
	sid := h.e.convs.Lookup(t1Key).Record().SessionID
	h.stop() // releases the lease and removes the pid file
	mark := procs.MarkPath(h.opts.StateDir, sid)
	if err := os.Symlink(victim, mark); err != nil {
		t.Fatal(err)
	}

	h = h.restart()
	h.say("alice", "T1", "again")
	h.rec.waitSend(t, "echo: again")
	h.waitIdle()
	if !procs.PidAlive(bystander.Process.Pid) {
		t.Error("the process named by the link's target was killed")
	}
	if b, _ := os.ReadFile(victim); string(b) != victimText {
		t.Errorf("the link's target became %q", b)
	}
	fi, err := os.Lstat(mark)
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("pid file is %v (%v), want a regular file", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(mark); !strings.HasPrefix(string(b), strconv.Itoa(h.e.convs.Lookup(t1Key).Process().Pid())+" ") {
		t.Errorf("pid file holds %q, want the live claude's pid", b)
	}
	if len(h.logs.Records("Removing a symbolic link found in place of an agent pid file; its target is left alone")) != 1 {
		t.Error("the removed link was not logged")
	}
}

// TestSessionRecordLinkIsNotFollowed: a link planted where a
// conversation's record goes is moved aside, never read or written
// through; the conversation starts fresh and the target is unchanged.
func TestSessionRecordLinkIsNotFollowed(t *testing.T) {
	h := newHarness(t, nil)
	victimText := `{"key":"fake/C1/T1","session_id":"0b3c6c1e-2f7e-4a53-9b7e-2f1d0a9c1234"}`
	victim := t.TempDir() + "/planted.json"
	if err := os.WriteFile(victim, []byte(victimText), 0o600); err != nil {
		t.Fatal(err)
	}
	p := conv.NewStore(h.opts.StateDir).Path(t1Key)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, p); err != nil {
		t.Fatal(err)
	}
	h.say("alice", "T1", "hello")
	h.rec.waitSend(t, "echo: hello")
	h.waitIdle()
	if spawns := h.fa.spawnsSnapshot(); len(spawns) != 1 || spawns[0].ResumeID != "" {
		t.Errorf("spawns = %+v, want one fresh session, not the planted id resumed", spawns)
	}
	if b, _ := os.ReadFile(victim); string(b) != victimText {
		t.Errorf("the link's target became %q", b)
	}
	if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("record is %v (%v), want a regular file written in place of the link", fi.Mode(), err)
	}
}
