package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/cc-connect/cc-connect/agentcfg"
	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/engine"
	"github.com/cc-connect/cc-connect/launch"
	"github.com/cc-connect/cc-connect/worktree"
)

// worktreeRow is one worktree as `worktrees --json` prints it.
type worktreeRow struct {
	Workspace    string `json:"workspace"`
	Path         string `json:"path"`
	Branch       string `json:"branch"`
	Base         string `json:"base,omitempty"`
	Conversation string `json:"conversation,omitempty"`
	// InUse: a session record has this worktree as its workspace, so a
	// conversation may still work in it. The others are retired.
	InUse     bool   `json:"in_use"`
	Missing   bool   `json:"missing,omitempty"`
	Changes   int    `json:"uncommitted_changes"`
	Ahead     int    `json:"commits_not_merged"`
	Removable bool   `json:"removable"`
	Problem   string `json:"problem,omitempty"`

	wt worktree.Worktree
}

// worktreesMain is `cc-connect worktrees [list|remove|prune] …`.
func worktreesMain(ctx context.Context, configPath string, args []string, std stdio) int {
	sub := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("cc-connect worktrees "+sub, flag.ContinueOnError)
	path := fs.String("config", configPath, "config file")
	asJSON := fs.Bool("json", false, "print JSON for scripts (list)")
	force := fs.Bool("force", false, "remove even with uncommitted changes or unmerged commits (remove)")
	if code, ok := parseFlags(fs, args, std); !ok {
		return code
	}
	switch {
	case sub != "list" && sub != "remove" && sub != "prune":
		fmt.Fprintf(std.Err, "cc-connect worktrees: unknown command %q (list, remove or prune)\n\n%s", sub, usageText)
		return exitUsage
	case sub == "remove" && fs.NArg() == 0:
		fmt.Fprintf(std.Err, "cc-connect worktrees remove: name the worktrees to remove (a name, branch or path from the list)\n")
		return exitUsage
	case sub != "remove" && fs.NArg() > 0:
		fmt.Fprintf(std.Err, "cc-connect worktrees %s: unexpected argument %q\n\n%s", sub, fs.Arg(0), usageText)
		return exitUsage
	}
	cfg, err := config.Load(*path)
	if err != nil {
		fmt.Fprintf(std.Err, "cc-connect: %v\n", err)
		return exitUsage
	}
	rows, err := collectWorktrees(ctx, cfg)
	if err != nil {
		fmt.Fprintf(std.Err, "cc-connect worktrees: %v\n", err)
		return exitFailure
	}
	switch sub {
	case "remove":
		return removeWorktrees(ctx, agentcfg.From(cfg).Rule(), rows, fs.Args(), *force, std)
	case "prune":
		var retired []string
		for _, r := range rows {
			if !r.InUse && r.Removable {
				retired = append(retired, r.Path)
			}
		}
		if len(retired) == 0 {
			fmt.Fprintln(std.Out, "No retired worktree is clean and merged; nothing removed.")
			return exitOK
		}
		return removeWorktrees(ctx, agentcfg.From(cfg).Rule(), rows, retired, false, std)
	}
	if *asJSON {
		enc := json.NewEncoder(std.Out)
		enc.SetIndent("", "  ")
		if rows == nil {
			rows = []worktreeRow{}
		}
		err = enc.Encode(rows)
	} else {
		err = writeWorktrees(std.Out, rows)
	}
	if err != nil {
		fmt.Fprintf(std.Err, "cc-connect worktrees: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// collectWorktrees lists cc-connect's worktrees of every workspace bound
// with worktree = true, or that has a worktrees folder from before, with
// their state and whether a session record uses them.
func collectWorktrees(ctx context.Context, cfg *config.Config) ([]worktreeRow, error) {
	records, err := engine.ReadRecords(cfg.State.Dir)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	for _, r := range records {
		if r.Err == nil && r.Workspace != "" {
			used[r.Workspace] = true
		}
	}
	var rows []worktreeRow
	seen := map[string]bool{}
	for _, b := range cfg.Bindings {
		ws := b.Workspace
		if seen[ws] {
			continue
		}
		seen[ws] = true
		if _, err := os.Stat(filepath.Join(ws, worktree.StateDirName, worktree.DirName)); err != nil && !b.Worktree {
			continue
		}
		m := worktree.New(ws, agentcfg.From(cfg).Rule())
		list, err := m.List(ctx)
		if err != nil {
			rows = append(rows, worktreeRow{Workspace: ws, Problem: err.Error()})
			continue
		}
		for _, wt := range list {
			row := worktreeRow{Workspace: ws, Path: wt.Path, Branch: wt.Branch, Base: wt.Base, Conversation: wt.Conversation,
				InUse: used[wt.Path], Missing: wt.Missing, wt: wt}
			if st, err := m.State(ctx, wt); err != nil {
				row.Problem = err.Error()
			} else {
				row.Changes, row.Ahead, row.Removable = st.Changes, st.Ahead, st.Removable()
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// removeWorktrees removes the worktrees refs name (a path, a folder name or
// a branch). A worktree a conversation uses is refused, and so is one with
// work in it unless force; each refusal says why and what to do.
func removeWorktrees(ctx context.Context, rule launch.Rule, rows []worktreeRow, refs []string, force bool, std stdio) int {
	code := exitOK
	for _, ref := range refs {
		var row *worktreeRow
		for i := range rows {
			r := &rows[i]
			if r.Path != "" && (ref == r.Path || ref == filepath.Base(r.Path) || ref == r.Branch) {
				row = r
				break
			}
		}
		switch {
		case row == nil:
			fmt.Fprintf(std.Err, "%s: no worktree of cc-connect by that name, branch or path (cc-connect worktrees lists them)\n", ref)
			code = exitFailure
			continue
		case row.InUse:
			fmt.Fprintf(std.Err, "%s: refused: a conversation still uses it (start a new session there with !new first)\n", row.Path)
			code = exitFailure
			continue
		}
		rm, err := worktree.New(row.Workspace, rule).Remove(ctx, row.wt, force)
		switch {
		case errors.Is(err, worktree.ErrDirty):
			fmt.Fprintf(std.Err, "%s: refused: %d uncommitted changes; commit them in the worktree, or remove it with --force to discard them\n", row.Path, row.Changes)
			code = exitFailure
		case errors.Is(err, worktree.ErrUnmerged):
			fmt.Fprintf(std.Err, "%s: refused: %s has %d commits not merged into %s; merge them, or --force (the branch is kept)\n", row.Path, row.Branch, row.Ahead, row.Base)
			code = exitFailure
		case err != nil:
			fmt.Fprintf(std.Err, "%s: %v\n", row.Path, err)
			code = exitFailure
		default:
			fmt.Fprintf(std.Out, "removed %s", row.Path)
			if rm.Discarded > 0 {
				fmt.Fprintf(std.Out, " (%d uncommitted changes discarded)", rm.Discarded)
			}
			if rm.BranchKept {
				fmt.Fprintf(std.Out, "; branch %s kept: it has commits not in %s", row.Branch, row.Base)
			} else {
				fmt.Fprintf(std.Out, " and its branch %s", row.Branch)
			}
			fmt.Fprintln(std.Out)
		}
	}
	return code
}

// writeWorktrees prints the worktrees for a person.
func writeWorktrees(w io.Writer, rows []worktreeRow) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "No worktrees of cc-connect (bindings with worktree = true make them).")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKSPACE\tBRANCH\tSTATE\tUSE\tCONVERSATION")
	for _, r := range rows {
		if r.Path == "" {
			fmt.Fprintf(tw, "%s\t-\tcannot list: %s\t-\t-\n", r.Workspace, r.Problem)
			continue
		}
		state := r.Problem
		if state == "" {
			state = worktree.State{Changes: r.Changes, Ahead: r.Ahead, Merged: r.Ahead == 0}.String()
		}
		if r.Missing {
			state = "folder missing; " + state
		}
		use := "retired"
		if r.InUse {
			use = "in use"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Workspace, r.Branch, state, use, orDash(r.Conversation))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\ncc-connect worktrees prune removes the retired ones that are clean and merged; "+
		"cc-connect worktrees remove [--force] BRANCH removes one.")
	return err
}

// retiredWorktrees are the worktrees no session record uses, for
// `cc-connect sessions`; none without a worktree binding.
func retiredWorktrees(ctx context.Context, cfg *config.Config) ([]worktreeRow, error) {
	if !slices.ContainsFunc(cfg.Bindings, func(b config.Binding) bool { return b.Worktree }) {
		return nil, nil
	}
	rows, err := collectWorktrees(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var out []worktreeRow
	for _, r := range rows {
		if !r.InUse && r.Problem == "" {
			out = append(out, r)
		}
	}
	return out, nil
}

// writeRetiredWorktrees is the part of `cc-connect sessions` that lists
// retired conversations' worktrees.
func writeRetiredWorktrees(b *strings.Builder, rows []worktreeRow) error {
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintf(b, "\nWorktrees of retired conversations (%d), kept until removed with `cc-connect worktrees prune` or `remove`:\n", len(rows))
	tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		state := "clean"
		if r.Changes > 0 {
			state = fmt.Sprintf("%d uncommitted", r.Changes)
		}
		merged := "merged"
		if r.Ahead > 0 {
			merged = fmt.Sprintf("%d commits not merged", r.Ahead)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s, %s\t%s\n", r.Branch, r.Path, state, merged, orDash(r.Conversation))
	}
	return tw.Flush()
}
