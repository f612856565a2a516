// Package worktree gives each conversation of a binding its own git
// worktree, so that parallel threads do not trample one checkout. A
// conversation's worktree is <workspace>/.cc-connect/worktrees/<name> on
// the branch cc-connect/<name>, made from the workspace's current branch;
// the folder is private and git-ignored like the rest of .cc-connect/.
//
// It never loses work: a worktree is removed only when it has no
// uncommitted changes (untracked files count) and its branch is merged into
// the branch it was made from, unless an admin forces it; even then a
// branch with commits of its own is kept. It runs the git binary with
// arguments, never a shell, through launch as the agent's user, with
// nothing of the repository able to make it run a command (git.go), and
// knows nothing about chat.
package worktree

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode"

	"github.com/cc-connect/cc-connect/launch"
)

// Where worktrees live, relative to the workspace, and how their branches
// are named.
const (
	StateDirName = ".cc-connect"
	DirName      = "worktrees"
	BranchPrefix = "cc-connect/"
)

// Errors callers branch on.
var (
	// ErrNotRepo: the workspace is not the top folder of a git working
	// tree. The binding's worktree setting cannot apply; say so.
	ErrNotRepo = errors.New("workspace is not a git repository")
	// ErrDirty: the worktree has uncommitted changes; removing it would
	// lose them. Commit or stash them, or force as an admin.
	ErrDirty = errors.New("worktree has uncommitted changes")
	// ErrUnmerged: the worktree's branch has commits its base branch does
	// not. Merge them, or force as an admin (the branch is kept).
	ErrUnmerged = errors.New("worktree branch is not merged")
	// ErrUnsafePath: something on the way to the worktrees folder is a
	// symbolic link or not a folder; nothing is written through it.
	ErrUnsafePath = errors.New("unsafe worktree path")
	// ErrNotFound: no worktree of cc-connect matches.
	ErrNotFound = errors.New("no such worktree")
)

// Manager makes and removes the worktrees of one workspace.
type Manager struct {
	workspace string      // normalized, the top of a git working tree
	gitBin    string      // the git binary
	rule      launch.Rule // how git starts: the agent's (agentproc.Config.Rule)
}

// New returns a Manager for workspace (normalized with
// workspace.Normalize) whose git runs under rule: the agent's, so that git
// gets no secret and, with agent.user, runs as that user, who then owns
// the worktrees it makes. It checks nothing yet.
func New(workspace string, rule launch.Rule) *Manager {
	return &Manager{workspace: workspace, gitBin: "git", rule: rule}
}

// Worktree is one conversation's worktree.
type Worktree struct {
	// Path is the worktree's folder, absolute and with symlinks resolved:
	// the session's workspace (and so its Claude Code project).
	Path   string
	Branch string
	// Base is the branch it was made from, which it must be merged into
	// before it may be removed.
	Base string
	// Conversation is what it was made for, as given to Create ("" when
	// cc-connect's note about it is missing).
	Conversation string
	// Missing: git still lists it but its folder is gone.
	Missing bool
}

// Name is the worktree name of a conversation: readable (the id's letters
// and digits, lower case, dashes between) and collision-free (a hash of the
// whole id ends it), so that "a/b", "a-b" and "A B" get three names. It is
// a valid git branch component and a safe folder name whatever the id
// holds.
func Name(conversation string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(conversation) {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	sum := sha256.Sum256([]byte(conversation))
	hash := hex.EncodeToString(sum[:6])
	if b.Len() == 0 {
		return hash
	}
	return b.String() + "-" + hash
}

// dir is the worktrees folder.
func (m *Manager) dir() string { return filepath.Join(m.workspace, StateDirName, DirName) }

// workspaceLocks holds one mutex per workspace path (*sync.Mutex): git
// takes its own locks on refs and worktree metadata and fails, rather than
// waits, when two commands meet; conversations of one workspace creating
// and removing worktrees at once take turns here instead.
var workspaceLocks sync.Map

func (m *Manager) lock() func() {
	mu, _ := workspaceLocks.LoadOrStore(m.workspace, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	return mu.(*sync.Mutex).Unlock
}

// Create returns the worktree of conversation, making it when it does not
// exist yet: a new branch from the workspace's current branch (or commit,
// when HEAD is detached). Calling it again for the same conversation
// returns the same worktree.
func (m *Manager) Create(ctx context.Context, conversation string) (Worktree, error) {
	defer m.lock()()
	if err := m.checkRepo(ctx); err != nil {
		return Worktree{}, err
	}
	name := Name(conversation)
	path := filepath.Join(m.dir(), name)
	branch := BranchPrefix + name
	if wt, err := m.find(ctx, path); err == nil && !wt.Missing {
		return wt, nil
	}
	if err := ensureDirs(m.workspace, m.rule); err != nil {
		return Worktree{}, err
	}
	base, err := m.currentBranch(ctx)
	if err != nil {
		return Worktree{}, err
	}
	// A missing folder that git still lists is pruned first, so that add
	// may reuse the path.
	if _, err := m.git(ctx, m.workspace, "worktree", "prune"); err != nil {
		return Worktree{}, err
	}
	args := []string{"worktree", "add", "-b", branch, "--", path, base}
	if m.branchExists(ctx, branch) {
		// Kept from an earlier removal by force: continue on it.
		args = []string{"worktree", "add", "--", path, branch}
	}
	if _, err := m.git(ctx, m.workspace, args...); err != nil {
		return Worktree{}, fmt.Errorf("creating the worktree of %q: %w", conversation, err)
	}
	if err := writeNote(m.workspace, name, note{Conversation: conversation, Branch: branch, Base: base}); err != nil {
		return Worktree{}, err
	}
	return m.find(ctx, path)
}

// List returns cc-connect's worktrees of the workspace, in git's order.
func (m *Manager) List(ctx context.Context) ([]Worktree, error) {
	if err := m.checkRepo(ctx); err != nil {
		return nil, err
	}
	out, err := m.git(ctx, m.workspace, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return nil, err
	}
	var list []Worktree
	for _, rec := range bytes.Split(out, []byte("\x00\x00")) {
		var wt Worktree
		for _, field := range bytes.Split(rec, []byte("\x00")) {
			k, v, _ := strings.Cut(string(field), " ")
			switch k {
			case "worktree":
				wt.Path = v
			case "branch":
				wt.Branch = strings.TrimPrefix(v, "refs/heads/")
			case "prunable":
				wt.Missing = true
			}
		}
		if wt.Path == "" || filepath.Dir(wt.Path) != m.dir() {
			continue // the main worktree, or one cc-connect did not make
		}
		if !wt.Missing {
			if _, err := os.Stat(wt.Path); err != nil {
				wt.Missing = true
			}
		}
		if n, err := readNote(m.workspace, filepath.Base(wt.Path)); err == nil {
			wt.Conversation = n.Conversation
			if validRef(n.Base) {
				// The note lies where Claude may write: a base that
				// could read as an option or a range is not one.
				wt.Base = n.Base
			}
		}
		list = append(list, wt)
	}
	return list, nil
}

// Find returns the worktree whose path, folder name or branch is ref.
func (m *Manager) Find(ctx context.Context, ref string) (Worktree, error) {
	list, err := m.List(ctx)
	if err != nil {
		return Worktree{}, err
	}
	for _, wt := range list {
		if ref == wt.Path || ref == filepath.Base(wt.Path) || ref == wt.Branch {
			return wt, nil
		}
	}
	return Worktree{}, fmt.Errorf("%w: %q in %s", ErrNotFound, ref, m.workspace)
}

func (m *Manager) find(ctx context.Context, path string) (Worktree, error) {
	return m.Find(ctx, path)
}

// checkRepo makes sure the workspace is the top of a git working tree.
func (m *Manager) checkRepo(ctx context.Context) error {
	out, err := m.git(ctx, m.workspace, "rev-parse", "--show-toplevel")
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrNotRepo, m.workspace, err)
	}
	top := strings.TrimSpace(string(out))
	if real, err := filepath.EvalSymlinks(top); err == nil {
		top = real
	}
	ws := m.workspace
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real
	}
	if top != ws {
		return fmt.Errorf("%w: %s is inside the repository %s, not its top folder", ErrNotRepo, m.workspace, top)
	}
	return nil
}

// currentBranch is the workspace's checked-out branch, or its commit when
// HEAD is detached.
func (m *Manager) currentBranch(ctx context.Context) (string, error) {
	if out, err := m.git(ctx, m.workspace, "symbolic-ref", "--quiet", "--short", "HEAD"); err == nil {
		if b := strings.TrimSpace(string(out)); validRef(b) {
			return b, nil
		}
	}
	out, err := m.git(ctx, m.workspace, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return "", fmt.Errorf("finding the workspace's current commit (a repository needs one commit for worktrees): %w", err)
	}
	id := strings.TrimSpace(string(out))
	if !validRef(id) {
		return "", fmt.Errorf("finding the workspace's current commit: git answered %q", id)
	}
	return id, nil
}

func (m *Manager) branchExists(ctx context.Context, branch string) bool {
	_, err := m.git(ctx, m.workspace, "show-ref", "--verify", "--quiet", "--", "refs/heads/"+branch)
	return err == nil
}

// GitError is a git command that failed.
type GitError struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *GitError) Error() string {
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), e.Stderr)
}

func (e *GitError) Unwrap() error { return e.Err }
