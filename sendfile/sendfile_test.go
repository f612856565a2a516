package sendfile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/platform"
)

// workspace makes a workspace with files, folders and symlinks of every
// kind the tool must tell apart, and a secret outside it.
func workspace(t *testing.T) (ws, outside string) {
	t.Helper()
	base := t.TempDir()
	ws = filepath.Join(base, "ws")
	outside = filepath.Join(base, "outside")
	for _, d := range []string{ws, outside, filepath.Join(ws, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(ws, "report.txt"), "the report\n")
	write(filepath.Join(ws, "sub", "pic.png"), "\x89PNG\r\n\x1a\n....")
	write(filepath.Join(ws, "big.bin"), strings.Repeat("x", 1000))
	write(filepath.Join(outside, "secret"), "secret\n")
	links := map[string]string{
		"out-file":    filepath.Join(outside, "secret"),
		"out-dir":     outside,
		"rel-out":     "../outside/secret",
		"in-link":     "report.txt",
		"sub/up-link": "../report.txt",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws, outside
}

func TestRead(t *testing.T) {
	t.Parallel()
	ws, outside := workspace(t)
	tests := []struct {
		path    string
		limit   int64
		want    string // the file's content, or "" for an error
		wantErr error
		errText string
	}{
		{path: "report.txt", want: "the report\n"},
		{path: "./sub/../report.txt", want: "the report\n"},
		{path: filepath.Join(ws, "report.txt"), want: "the report\n"},
		{path: "in-link", want: "the report\n"},
		{path: "sub/up-link", want: "the report\n"},
		{path: "../outside/secret", wantErr: ErrOutside},
		{path: filepath.Join(outside, "secret"), wantErr: ErrOutside},
		{path: "/etc/passwd", wantErr: ErrOutside},
		{path: "out-file", wantErr: ErrOutside},
		{path: "out-dir/secret", wantErr: ErrOutside},
		{path: "rel-out", wantErr: ErrOutside},
		{path: "sub", wantErr: ErrNotRegular, errText: "a folder"},
		{path: ".", wantErr: ErrNotRegular},
		{path: ws, wantErr: ErrNotRegular},
		{path: "fifo", wantErr: ErrNotRegular, errText: "a named pipe"},
		{path: "big.bin", limit: 999, wantErr: ErrTooLarge, errText: "the chat's limit of 999 bytes"},
		{path: "big.bin", want: strings.Repeat("x", 1000)},
		{path: "missing.txt", errText: "does not exist in the workspace"},
		{path: "", errText: "needs the path"},
		{path: "a\x00b", errText: "is not a path"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			f, err := Read(Config{Workspace: ws, MaxSize: 1000, Limit: tt.limit}, tt.path)
			if tt.want != "" {
				if err != nil {
					t.Fatalf("Read: %v", err)
				}
				if string(f.Data) != tt.want {
					t.Errorf("data %q, want %q", f.Data, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("read %q (%q), want an error", tt.path, f.Data)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.errText) {
				t.Errorf("error %q lacks %q", err, tt.errText)
			}
			if strings.Contains(err.Error(), "secret\n") {
				t.Errorf("error shows the outside file's content: %v", err)
			}
		})
	}
	f, err := Read(Config{Workspace: ws, MaxSize: 999}, "big.bin")
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "files.send_file_max_size") {
		t.Errorf("over the cap: %v %v", f.Name, err)
	}
	f, err = Read(Config{Workspace: ws, MaxSize: 1000}, "sub/pic.png")
	if err != nil || f.Name != "pic.png" || f.Path != filepath.Join("sub", "pic.png") || f.Mime != "image/png" {
		t.Errorf("pic: %+v %v", f, err)
	}
}

func TestReadRefusesWhatTheAgentUserCannotRead(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 65534 {
		t.Skip("the test's files must belong to another user than nobody")
	}
	ws, _ := workspace(t)
	// nobody passes through t.TempDir's private folders to the workspace.
	for _, d := range []string{filepath.Dir(ws), filepath.Dir(filepath.Dir(ws))} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	mk := func(dir string, perm os.FileMode) {
		if err := os.Mkdir(filepath.Join(ws, dir), perm); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, dir, "f.txt"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(ws, dir), perm); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	mk("closed", 0o700)
	mk("search-only", 0o711)
	if err := os.WriteFile(filepath.Join(ws, "owner-only"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("closed", filepath.Join(ws, "via-link")); err != nil {
		t.Fatal(err)
	}
	// An open folder inside a closed one, reached by a link to it: the
	// link names only the open folder.
	mk("deep", 0o755)
	mk("deep/open", 0o755)
	if err := os.Chmod(filepath.Join(ws, "deep"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("deep/open", filepath.Join(ws, "via-deep")); err != nil {
		t.Fatal(err)
	}
	nobody := &agentproc.User{Name: "nobody", UID: 65534, GID: 65534, Groups: []uint32{65534}}
	tests := []struct {
		path string
		ok   bool
	}{
		{"report.txt", true},
		{"owner-only", false},       // the file's own bits
		{"closed/f.txt", false},     // a folder on the way nobody cannot search
		{"search-only/f.txt", true}, // search without listing is enough
		{"via-link/f.txt", false},   // through a link into that folder
		{"sub/../closed/f.txt", false},
		{"via-deep/f.txt", false}, // the folder the link's target lies in
	}
	for _, tt := range tests {
		_, err := Read(Config{Workspace: ws, MaxSize: 100, User: nobody}, tt.path)
		if tt.ok && err != nil {
			t.Errorf("%s for nobody: %v", tt.path, err)
		}
		if !tt.ok && !errors.Is(err, ErrNotReadable) {
			t.Errorf("%s for nobody = %v, want ErrNotReadable", tt.path, err)
		}
		// cc-connect's own user reads them all.
		if _, err := Read(Config{Workspace: ws, MaxSize: 100}, tt.path); err != nil {
			t.Errorf("%s for cc-connect's user: %v", tt.path, err)
		}
	}
}

func TestTool(t *testing.T) {
	t.Parallel()
	ws, _ := workspace(t)
	var sent []platform.OutgoingFile
	sendErr := error(nil)
	tool := Tool(Config{Workspace: ws, MaxSize: 1000, Send: func(_ context.Context, f platform.OutgoingFile) error {
		sent = append(sent, f)
		return sendErr
	}})
	if tool.Name != "send_file" || agentproc.HostToolName(tool.Name) != "mcp__cc-connect__send_file" || !json.Valid(tool.InputSchema) {
		t.Fatalf("tool %q schema %s", tool.Name, tool.InputSchema)
	}
	text, err := tool.Call(context.Background(), json.RawMessage(`{"path":"report.txt","comment":"here"}`))
	if err != nil || text != "sent report.txt (11 bytes) to the chat" {
		t.Fatalf("call: %q %v", text, err)
	}
	if len(sent) != 1 || !bytes.Equal(sent[0].Data, []byte("the report\n")) || sent[0].Comment != "here" || sent[0].Name != "report.txt" {
		t.Errorf("sent %+v", sent)
	}
	if _, err := tool.Call(context.Background(), json.RawMessage(`{"path":"out-file"}`)); err == nil || len(sent) != 1 {
		t.Errorf("outside file: %v, sent %d", err, len(sent))
	}
	if _, err := tool.Call(context.Background(), json.RawMessage(`{"path":7}`)); err == nil || !strings.Contains(err.Error(), "send_file takes") {
		t.Errorf("bad arguments: %v", err)
	}
	sendErr = &platform.FileTooLargeError{Size: 11, Limit: 10}
	if _, err := tool.Call(context.Background(), json.RawMessage(`{"path":"report.txt"}`)); err == nil ||
		err.Error() != "the chat refused report.txt: 11 bytes is over its limit of 10 bytes" {
		t.Errorf("refused by the chat: %v", err)
	}
}
