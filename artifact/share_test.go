//go:build unix

package artifact

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cc-connect/cc-connect/internal/testenv"
)

// asNobody runs /bin/sh -c script as uid and gid 65534 and returns its
// output and whether it exited 0.
func asNobody(t *testing.T, dir, script string) (string, bool) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{65534}}}
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

// TestReaderGIDLetsTheAgentReadOnly: when the agent runs as another user,
// the prompts and attachments it is pointed at are readable by its group,
// and nothing in .cc-connect/ is writable by it. A folder made private
// before is opened up on the next write.
func TestReaderGIDLetsTheAgentReadOnly(t *testing.T) {
	testenv.NeedRoot(t, "sharing files with another user's group")
	ws := newWorkspace(t)
	// The agent owns its workspace; t.TempDir's parent is private.
	if err := os.Chmod(filepath.Dir(ws), 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(ws, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	// A private store first, as before agent.user was set.
	if _, err := NewStore(ws, Options{}).Put([]byte("old private prompt")); err != nil {
		t.Fatal(err)
	}
	if out, ok := asNobody(t, ws, "ls .cc-connect/artifacts"); ok {
		t.Fatalf("nobody lists a private store: %s", out)
	}

	s := NewStore(ws, Options{ReaderGID: 65534})
	a, err := s.Put([]byte("a large prompt for the agent"))
	if err != nil {
		t.Fatal(err)
	}
	att, err := s.PutAttachment("report.log", []byte("attached text"))
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{StateDirName, StateDirName + "/" + ArtifactsDirName, StateDirName + "/" + AttachmentsDirName} {
		fi, err := os.Stat(filepath.Join(ws, rel))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm() != 0o750 || st.Gid != 65534 || st.Uid != 0 {
			t.Errorf("%s: mode %04o owner %d:%d, want 0750 root:65534", rel, fi.Mode().Perm(), st.Uid, st.Gid)
		}
	}
	for _, rel := range []string{a.RelPath, att.RelPath} {
		fi, err := os.Stat(filepath.Join(ws, rel))
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != 0o640 || st.Gid != 65534 {
			t.Errorf("%s: mode %04o group %d, want 0640 group 65534", rel, fi.Mode().Perm(), st.Gid)
		}
	}
	out, ok := asNobody(t, ws, "cat "+a.RelPath+" "+att.RelPath)
	if !ok || !strings.Contains(out, "a large prompt for the agent") || !strings.Contains(out, "attached text") {
		t.Errorf("the agent's user cannot read what it is pointed at: %s", out)
	}
	for _, script := range []string{
		"echo x > " + a.RelPath,
		"touch .cc-connect/artifacts/planted",
		"rm " + att.RelPath,
	} {
		if out, ok := asNobody(t, ws, script); ok {
			t.Errorf("the agent's user could %q: %s", script, out)
		}
	}
	// The same content again is found and left as it is.
	if again, err := s.Put([]byte("a large prompt for the agent")); err != nil || again != a {
		t.Errorf("second Put = %+v, %v", again, err)
	}
}
