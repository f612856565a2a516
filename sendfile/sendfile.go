// Package sendfile is Claude's send_file tool: it reads a file of the
// workspace that the agent names, with the checks that keep it to that
// workspace (no path or symlink out of it, only regular files, a size cap,
// only what the agent's user could read itself, through every folder on
// the way), and hands it to the
// caller's delivery, which posts it into the conversation. It is served to
// each claude as a host tool (agentproc.HostTool) and allowed there
// without a prompt: what it can send is what these checks let through.
package sendfile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/platform"
)

// Name is the tool's MCP name; the model calls mcp__cc-connect__send_file.
const Name = "send_file"

// Sentinels callers and tests branch on; the errors the tool returns wrap
// them and say the figures and the path.
var (
	ErrOutside     = errors.New("not inside the workspace")
	ErrNotRegular  = errors.New("not a regular file")
	ErrTooLarge    = errors.New("file too large")
	ErrNotReadable = errors.New("not readable by the agent's user")
)

// Config says where files come from and where they go.
type Config struct {
	// Workspace is the folder files are read from (the conversation's
	// working directory, its real path).
	Workspace string
	// MaxSize is the largest file sent, in bytes (files.send_file_max_size);
	// the delivery's platform may take less (Limit).
	MaxSize int64
	// Limit, when set, is the platform's own limit for this conversation
	// (platform.FileSender.MaxFileSize); 0 or less means none known.
	Limit int64
	// User, when set, is the OS user the agent runs as: a file that user
	// could not read is refused, since cc-connect may read more than
	// Claude may.
	User *agentproc.User
	// Send posts the file into the conversation.
	Send func(ctx context.Context, f platform.OutgoingFile) error
}

// Args are the tool's arguments.
type Args struct {
	Path    string `json:"path"`
	Comment string `json:"comment,omitempty"`
}

const description = "Send a file from the workspace to the chat this conversation is in, where the people you work with " +
	"can download it. Use it for a report, a log, a patch, an image or any other file they ask for. The file must be " +
	"inside the workspace (give its path relative to the working directory, or absolute inside it) and a regular file; " +
	"the comment, when given, is posted with it."

var schema = json.RawMessage(`{"type":"object","properties":{` +
	`"path":{"type":"string","description":"path of the file to send, relative to the working directory or absolute inside it"},` +
	`"comment":{"type":"string","description":"optional text posted with the file"}},` +
	`"required":["path"],"additionalProperties":false}`)

// Tool is send_file for one process.
func Tool(cfg Config) agentproc.HostTool {
	return agentproc.HostTool{
		Name:        Name,
		Description: description,
		InputSchema: schema,
		Call: func(ctx context.Context, raw json.RawMessage) (string, error) {
			var a Args
			if err := json.Unmarshal(raw, &a); err != nil {
				return "", fmt.Errorf("send_file takes {\"path\": \"…\", \"comment\": \"…\"}: %v", err)
			}
			f, err := Read(cfg, a.Path)
			if err != nil {
				return "", err
			}
			f.Comment = a.Comment
			if err := cfg.Send(ctx, f); err != nil {
				var tl *platform.FileTooLargeError
				if errors.As(err, &tl) {
					return "", fmt.Errorf("the chat refused %s: %d bytes is over its limit of %d bytes", f.Path, tl.Size, tl.Limit)
				}
				return "", fmt.Errorf("sending %s to the chat failed: %w", f.Path, err)
			}
			return fmt.Sprintf("sent %s (%d bytes) to the chat", f.Path, len(f.Data)), nil
		},
	}
}

// Read reads the file at path (relative to cfg.Workspace, or absolute
// inside it) within cfg's limits. The file is opened through an os.Root
// of the workspace, so neither "..", nor a symlink anywhere on the way,
// nor a rename in between reaches out of it; it is opened without
// blocking and must be a regular file.
func Read(cfg Config, path string) (platform.OutgoingFile, error) {
	rel, err := relative(cfg.Workspace, path)
	if err != nil {
		return platform.OutgoingFile{}, err
	}
	root, err := os.OpenRoot(cfg.Workspace)
	if err != nil {
		return platform.OutgoingFile{}, fmt.Errorf("opening the workspace: %w", err)
	}
	defer root.Close()
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		var pe *fs.PathError
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return platform.OutgoingFile{}, fmt.Errorf("%s does not exist in the workspace", rel)
		case errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes"):
			return platform.OutgoingFile{}, fmt.Errorf("%s leads out of the workspace through a symlink: %w", rel, ErrOutside)
		}
		return platform.OutgoingFile{}, fmt.Errorf("opening %s: %w", rel, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return platform.OutgoingFile{}, fmt.Errorf("reading %s: %w", rel, err)
	}
	if !info.Mode().IsRegular() {
		return platform.OutgoingFile{}, fmt.Errorf("%s is %s: %w", rel, kind(info.Mode()), ErrNotRegular)
	}
	if cfg.User != nil && !reachableBy(f, filepath.Join(cfg.Workspace, rel), info, cfg.User) {
		return platform.OutgoingFile{}, fmt.Errorf("%s: %w %s", rel, ErrNotReadable, cfg.User)
	}
	limit, whose := cfg.MaxSize, "cc-connect's limit (files.send_file_max_size)"
	if cfg.Limit > 0 && cfg.Limit < limit {
		limit, whose = cfg.Limit, "the chat's limit"
	}
	if info.Size() > limit {
		return platform.OutgoingFile{}, fmt.Errorf("%s is %d bytes, over %s of %d bytes: %w", rel, info.Size(), whose, limit, ErrTooLarge)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return platform.OutgoingFile{}, fmt.Errorf("reading %s: %w", rel, err)
	}
	if int64(len(data)) > limit { // it grew while we read
		return platform.OutgoingFile{}, fmt.Errorf("%s is over %s of %d bytes: %w", rel, whose, limit, ErrTooLarge)
	}
	name := filepath.Base(rel)
	return platform.OutgoingFile{Name: name, Path: rel, Mime: mimeOf(name, data), Data: data}, nil
}

// relative turns the model's path into one relative to the workspace, or
// refuses it. Only the spelling is checked here; os.Root checks where it
// leads.
func relative(ws, path string) (string, error) {
	if strings.TrimSpace(path) == "" {
		return "", errors.New("send_file needs the path of a file in the workspace")
	}
	if strings.ContainsRune(path, 0) {
		return "", fmt.Errorf("%q is not a path", path)
	}
	p := path
	if filepath.IsAbs(p) {
		r, err := filepath.Rel(ws, filepath.Clean(p))
		if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return "", fmt.Errorf("%s: %w (%s)", path, ErrOutside, ws)
		}
		p = r
	}
	p = filepath.Clean(p)
	if p == "." {
		return "", fmt.Errorf("%s is the workspace itself, not a file: %w", path, ErrNotRegular)
	}
	if p == ".." || strings.HasPrefix(p, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s: %w (%s)", path, ErrOutside, ws)
	}
	return p, nil
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// reachableBy reports whether u could open the file f, opened as named
// (the workspace and the model's relative path), for reading by the mode
// bits: search (x) on every folder on the way, both as named and as the
// kernel resolved it (a link's own folder and its target's), and read (r)
// on the file itself. Root can. ACLs are not read: a file that an ACL
// alone opens to the agent is refused, never the other way round.
func reachableBy(f *os.File, named string, info fs.FileInfo, u *agentproc.User) bool {
	if u.UID == 0 {
		return true
	}
	dirs := map[string]bool{}
	for _, p := range []string{named, openedPath(f, named)} {
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			dirs[d] = true
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	for d := range dirs {
		di, err := os.Stat(d)
		if err != nil || !di.IsDir() || !permits(di, u, 0o1) {
			return false
		}
	}
	return permits(info, u, 0o4)
}

// openedPath is where the kernel found the open file f (Linux names it in
// /proc/self/fd), else named with its links resolved.
func openedPath(f *os.File, named string) string {
	var p string
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { p, _ = os.Readlink("/proc/self/fd/" + strconv.Itoa(int(fd))) })
	}
	if filepath.IsAbs(p) {
		return p
	}
	if p, err := filepath.EvalSymlinks(named); err == nil {
		return p
	}
	return named
}

// permits reports whether the mode bits of info grant u the access bit
// (4 read, 1 search) in u's class: owner, group, or others.
func permits(info fs.FileInfo, u *agentproc.User, bit fs.FileMode) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	mode := info.Mode().Perm()
	switch {
	case st.Uid == u.UID:
		return mode&(bit<<6) != 0
	case st.Gid == u.GID || containsGID(u.Groups, st.Gid):
		return mode&(bit<<3) != 0
	}
	return mode&bit != 0
}

func containsGID(groups []uint32, g uint32) bool {
	for _, x := range groups {
		if x == g {
			return true
		}
	}
	return false
}

// mimeOf guesses the content type from the name, else from the bytes.
func mimeOf(name string, data []byte) string {
	if t := mime.TypeByExtension(strings.ToLower(filepath.Ext(name))); t != "" {
		return t
	}
	return http.DetectContentType(data)
}
