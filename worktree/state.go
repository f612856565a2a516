package worktree

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// State is whether a worktree may be removed without losing work.
type State struct {
	// Changes counts uncommitted entries: modified, staged, deleted and
	// untracked files (ignored ones do not count).
	Changes int
	// Ahead counts the branch's commits that Base does not have; Merged
	// is Ahead == 0.
	Ahead  int
	Merged bool
}

// Clean reports whether the worktree has no uncommitted changes.
func (s State) Clean() bool { return s.Changes == 0 }

// Removable reports whether Remove takes it without force.
func (s State) Removable() bool { return s.Clean() && s.Merged }

// String is the state in a few words, for listings and !status.
func (s State) String() string {
	var parts []string
	if s.Clean() {
		parts = append(parts, "clean")
	} else {
		parts = append(parts, fmt.Sprintf("dirty (%d uncommitted)", s.Changes))
	}
	if s.Merged {
		parts = append(parts, "merged")
	} else {
		parts = append(parts, fmt.Sprintf("%d commits not merged", s.Ahead))
	}
	return strings.Join(parts, ", ")
}

// State reports wt's uncommitted changes and whether its branch is merged
// into its base. A worktree whose folder is gone has no changes.
func (m *Manager) State(ctx context.Context, wt Worktree) (State, error) {
	var st State
	if !wt.Missing {
		out, err := m.git(ctx, wt.Path, "status", "--porcelain=v1", "-z", "--untracked-files=all")
		if err != nil {
			return State{}, fmt.Errorf("checking %s for changes: %w", wt.Path, err)
		}
		entries := bytes.Split(out, []byte{0})
		for i := 0; i < len(entries); i++ {
			e := entries[i]
			if len(e) < 4 {
				continue // the empty tail after the last NUL
			}
			st.Changes++
			if e[0] == 'R' || e[0] == 'C' {
				i++ // a rename or copy is followed by its source path
			}
		}
	}
	base := wt.Base
	if base == "" {
		// cc-connect's note is gone: measure against the workspace's
		// current branch, the usual base.
		b, err := m.currentBranch(ctx)
		if err != nil {
			return State{}, err
		}
		base = b
	}
	if !validRef(base) || !validRef(wt.Branch) {
		return State{}, fmt.Errorf("comparing %q with %q: not branch names cc-connect passes to git", wt.Branch, base)
	}
	out, err := m.git(ctx, m.workspace, "rev-list", "--count", "--end-of-options", base+".."+wt.Branch, "--")
	if err != nil {
		return State{}, fmt.Errorf("comparing %s with %s: %w", wt.Branch, base, err)
	}
	st.Ahead, err = strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return State{}, fmt.Errorf("comparing %s with %s: %q is not a count", wt.Branch, base, out)
	}
	st.Merged = st.Ahead == 0
	return st, nil
}

// Removal says what Remove did.
type Removal struct {
	// BranchKept is set when the branch stays because it has commits of
	// its own (only with force).
	BranchKept bool
	// Discarded counts the uncommitted changes force threw away.
	Discarded int
}

// Remove removes wt when it is clean and merged, with its branch. With
// force (an admin's explicit choice) it removes a dirty or unmerged
// worktree too, discarding uncommitted changes, but keeps a branch that
// has commits of its own: cc-connect never deletes a commit.
func (m *Manager) Remove(ctx context.Context, wt Worktree, force bool) (Removal, error) {
	defer m.lock()()
	if filepath.Dir(wt.Path) != m.dir() || !strings.HasPrefix(wt.Branch, BranchPrefix) {
		return Removal{}, fmt.Errorf("%w: %s is not a worktree cc-connect made", ErrNotFound, wt.Path)
	}
	st, err := m.State(ctx, wt)
	if err != nil {
		return Removal{}, err
	}
	if !force && !st.Clean() {
		return Removal{}, fmt.Errorf("%w: %s has %d uncommitted changes", ErrDirty, wt.Path, st.Changes)
	}
	if !force && !st.Merged {
		return Removal{}, fmt.Errorf("%w: %s has %d commits not in %s", ErrUnmerged, wt.Branch, st.Ahead, orDefault(wt.Base, "its base"))
	}
	args := []string{"worktree", "remove", "--", wt.Path}
	if force {
		args = []string{"worktree", "remove", "--force", "--force", "--", wt.Path}
	}
	if wt.Missing {
		args = []string{"worktree", "prune"}
	}
	if _, err := m.git(ctx, m.workspace, args...); err != nil {
		return Removal{}, fmt.Errorf("removing %s: %w", wt.Path, err)
	}
	rm := Removal{Discarded: st.Changes}
	if !force {
		rm.Discarded = 0
	}
	if st.Merged {
		if _, err := m.git(ctx, m.workspace, "branch", "-D", "--", wt.Branch); err != nil {
			return rm, fmt.Errorf("deleting the merged branch %s: %w", wt.Branch, err)
		}
	} else {
		rm.BranchKept = true
	}
	if err := removeNote(m.workspace, filepath.Base(wt.Path)); err != nil {
		return rm, fmt.Errorf("removing the note of %s: %w", wt.Path, err)
	}
	return rm, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
