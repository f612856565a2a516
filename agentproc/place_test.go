package agentproc

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPlaceTranscriptAsTheAgentUser: a transcript taken over from another
// host is written, with agent.user set, by a child running as that user:
// the file and the project folder it makes are the agent's, private to
// it, and the CLI, as that user, reads them; a transcript the CLI keeps
// already for the id is not replaced. It needs root (to start a child as
// nobody); without it the test is skipped.
func TestPlaceTranscriptAsTheAgentUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("starting a child as another user needs root")
	}
	nobody, err := LookupUser("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	// A config dir nobody owns, under folders it may traverse.
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} { // the test's temporary folders
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	configDir := filepath.Join(base, "claude")
	if err := os.Mkdir(configDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(configDir, int(nobody.UID), int(nobody.GID)); err != nil {
		t.Fatal(err)
	}
	cfg := Config{User: nobody, Env: map[string]string{"CLAUDE_CONFIG_DIR": configDir}}
	const sid = "5b0c3c7e-2f7a-4b7e-9a51-0d1c2e3f4a5b"
	data := []byte(`{"type":"user","message":{"role":"user","content":"hello"}}` + "\n")
	ctx := context.Background()
	if err := PlaceTranscriptFor(ctx, cfg, "/srv/ws", sid, data, false); err != nil {
		t.Fatal(err)
	}
	path := TranscriptPath(configDir, "/srv/ws", sid)
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the placed transcript reads %q, %v", got, err)
	}
	for _, p := range []string{path, filepath.Dir(path)} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != nobody.UID || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is uid %d, mode %04o; want nobody's (%d), private", p, st.Uid, fi.Mode().Perm(), nobody.UID)
		}
	}
	if found, _, err := FindTranscript(configDir, sid, "/srv/ws"); err != nil || found != path {
		t.Errorf("the CLI's lookup finds %q, %v; want %s", found, err, path)
	}
	if err := PlaceTranscriptFor(ctx, cfg, "/srv/ws", sid, []byte("other\n"), false); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("placing over the CLI's own transcript: %v; want a refusal", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
		t.Errorf("the transcript was replaced: %q", got)
	}
	// Another host answered in the session since: its newer transcript
	// replaces this host's copy, still as the agent's user.
	newer := append(append([]byte(nil), data...), []byte(`{"type":"user","message":{"role":"user","content":"later"}}`+"\n")...)
	if err := PlaceTranscriptFor(ctx, cfg, "/srv/ws", sid, newer, true); err != nil {
		t.Fatalf("replacing the transcript with a newer one: %v", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, newer) {
		t.Errorf("the replaced transcript reads %q", got)
	}
}

// TestPlaceTranscriptReplaces: a transcript that exists is replaced only
// when asked (another host answered in the session since), and a link
// where the transcript goes is refused either way.
func TestPlaceTranscriptReplaces(t *testing.T) {
	const sid = "5b0c3c7e-2f7a-4b7e-9a51-0d1c2e3f4a5b"
	for _, tc := range []struct {
		name    string
		link    bool
		replace bool
		want    string // the file's content after, "" for a refusal
	}{
		{name: "kept", want: ""},
		{name: "replaced", replace: true, want: "newer\n"},
		{name: "a link is refused", link: true, replace: true, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			configDir := t.TempDir()
			path := TranscriptPath(configDir, "/srv/ws", sid)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			target := path
			if tc.link {
				target = filepath.Join(t.TempDir(), "elsewhere")
				if err := os.Symlink(target, path); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(target, []byte("own\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			err := PlaceTranscript(configDir, "/srv/ws", sid, []byte("newer\n"), tc.replace)
			got, _ := os.ReadFile(target)
			switch {
			case tc.want == "" && (err == nil || !strings.Contains(err.Error(), "exists")):
				t.Errorf("placing over an existing transcript: %v; want a refusal", err)
			case tc.want == "" && string(got) != "own\n":
				t.Errorf("the existing file reads %q after a refusal", got)
			case tc.want != "" && (err != nil || string(got) != tc.want):
				t.Errorf("replacing: %v, the transcript reads %q; want %q", err, got, tc.want)
			}
		})
	}
}
