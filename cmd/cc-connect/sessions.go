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
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/cc-connect/cc-connect/agentcfg"
	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/engine"
)

// Session states as the files show them. What a live engine holds in
// memory (a turn running, a permission pending) is for `!status`.
const (
	stateFresh         = "fresh"              // no Claude session yet: the next message starts one
	stateResumable     = "resumable"          // the next message resumes the Claude session
	stateNoTranscript  = "transcript missing" // the next message will fall back to a fresh session
	stateCorruptRecord = "corrupt"            // the engine moves this file aside on next use
)

// sessionsReport is what `sessions --json` prints; the text form shows the
// same.
type sessionsReport struct {
	StateDir        string            `json:"state_dir"`
	ClaudeConfigDir string            `json:"claude_config_dir"`
	Instance        instanceInfo      `json:"instance"`
	Sessions        []sessionRow      `json:"sessions"`
	Workspaces      []workspaceReport `json:"workspaces"`
	// RetiredWorktrees are the worktrees of worktree bindings that no
	// session uses any more (after a !new): kept until an admin merges
	// and removes them with `cc-connect worktrees`.
	RetiredWorktrees []worktreeRow `json:"retired_worktrees,omitempty"`
}

type instanceInfo struct {
	// Running is read from the pid in the instance lock file (no lock is
	// taken): that pid is alive.
	Running bool `json:"running"`
	PID     int  `json:"pid,omitempty"`
}

type sessionRow struct {
	Platform     string    `json:"platform,omitempty"`
	Channel      string    `json:"channel,omitempty"`
	Thread       string    `json:"thread,omitempty"`
	Workspace    string    `json:"workspace,omitempty"`
	State        string    `json:"state"`
	SessionID    string    `json:"session_id,omitempty"`
	Model        string    `json:"model,omitempty"`
	LastActivity time.Time `json:"last_activity,omitzero"`
	ContextPct   int       `json:"context_pct"`
	CostUSD      float64   `json:"total_cost_usd,omitempty"`
	Transcript   string    `json:"transcript,omitempty"`
	File         string    `json:"file"`
	Problem      string    `json:"problem,omitempty"`
}

type workspaceReport struct {
	Workspace   string          `json:"workspace"`
	Transcripts []transcriptRow `json:"transcripts"`
	Error       string          `json:"error,omitempty"`
}

type transcriptRow struct {
	SessionID   string    `json:"session_id"`
	Path        string    `json:"path"`
	Size        int64     `json:"size"`
	ModTime     time.Time `json:"mod_time"`
	Title       string    `json:"title,omitempty"`
	FirstPrompt string    `json:"first_prompt,omitempty"`
	LastPrompt  string    `json:"last_prompt,omitempty"`
	GitBranch   string    `json:"git_branch,omitempty"`
	// Conversation is the cc-connect conversation using this session
	// (platform/channel/thread), if any.
	Conversation string `json:"conversation,omitempty"`
}

// sessionsMain is `cc-connect sessions [--config FILE] [--json]`.
func sessionsMain(ctx context.Context, configPath string, args []string, std stdio) int {
	fs := flag.NewFlagSet("cc-connect sessions", flag.ContinueOnError)
	path := fs.String("config", configPath, "config file")
	asJSON := fs.Bool("json", false, "print JSON for scripts")
	if code, ok := parseFlags(fs, args, std); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(std.Err, "cc-connect sessions: unexpected argument %q\n\n%s", fs.Arg(0), usageText)
		return exitUsage
	}
	cfg, err := config.Load(*path)
	if err != nil {
		fmt.Fprintf(std.Err, "cc-connect: %v\n", err)
		return exitUsage
	}
	rep, err := collectSessions(cfg)
	if err != nil {
		fmt.Fprintf(std.Err, "cc-connect sessions: %v\n", err)
		return exitFailure
	}
	if rep.RetiredWorktrees, err = retiredWorktrees(ctx, cfg); err != nil {
		fmt.Fprintf(std.Err, "cc-connect sessions: %v\n", err)
		return exitFailure
	}
	if *asJSON {
		enc := json.NewEncoder(std.Out)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = writeSessions(std.Out, rep, time.Now())
	}
	if err != nil {
		fmt.Fprintf(std.Err, "cc-connect sessions: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// collectSessions reads the session records and, for each workspace bound
// in the config or named by a record, the Claude Code transcripts (lite
// reads: the head and tail of each file).
func collectSessions(cfg *config.Config) (sessionsReport, error) {
	claudeDir := agentproc.ConfigDirFor(agentcfg.From(cfg))
	rep := sessionsReport{
		StateDir:        cfg.State.Dir,
		ClaudeConfigDir: claudeDir,
		Instance:        instanceState(cfg.State.Dir),
		Sessions:        []sessionRow{},
		Workspaces:      []workspaceReport{},
	}
	records, err := engine.ReadRecords(cfg.State.Dir)
	if err != nil {
		return rep, err
	}
	for _, r := range records {
		rep.Sessions = append(rep.Sessions, sessionRowOf(r, claudeDir))
	}
	sort.SliceStable(rep.Sessions, func(i, j int) bool {
		a, b := rep.Sessions[i], rep.Sessions[j]
		if !a.LastActivity.Equal(b.LastActivity) {
			return a.LastActivity.After(b.LastActivity)
		}
		return a.File < b.File
	})

	inUse := map[string]string{}
	var order []string
	seen := map[string]bool{}
	addWorkspace := func(ws string) {
		if ws != "" && !seen[ws] {
			seen[ws] = true
			order = append(order, ws)
		}
	}
	for _, b := range cfg.Bindings {
		addWorkspace(b.Workspace)
	}
	for _, s := range rep.Sessions {
		addWorkspace(s.Workspace)
		if s.SessionID != "" {
			inUse[s.SessionID] = conversationName(s)
		}
	}
	for _, ws := range order {
		w := workspaceReport{Workspace: ws, Transcripts: []transcriptRow{}}
		lites, err := agentproc.ListSessions(claudeDir, ws)
		if err != nil {
			w.Error = err.Error()
		}
		for _, l := range lites {
			w.Transcripts = append(w.Transcripts, transcriptRow{
				SessionID: l.SessionID, Path: l.Path, Size: l.Size, ModTime: l.ModTime,
				Title: l.Title, FirstPrompt: l.FirstPrompt, LastPrompt: l.LastPrompt, GitBranch: l.GitBranch,
				Conversation: inUse[l.SessionID],
			})
		}
		rep.Workspaces = append(rep.Workspaces, w)
	}
	return rep, nil
}

// sessionRowOf turns an engine record into a row, asking Claude Code's
// config dir whether its session can still be resumed.
func sessionRowOf(r engine.RecordInfo, claudeDir string) sessionRow {
	row := sessionRow{File: r.File}
	if r.Err != nil {
		row.State, row.Problem = stateCorruptRecord, r.Err.Error()
		return row
	}
	row.Platform, row.Channel, row.Thread, row.Workspace = r.Platform, r.Channel, r.Thread, r.Workspace
	row.SessionID, row.Model, row.LastActivity = r.SessionID, r.Model, r.LastActivity
	row.ContextPct, row.CostUSD = r.ContextPct, r.TotalCostUSD
	if row.SessionID == "" {
		row.State = stateFresh
		return row
	}
	if p, _, err := agentproc.FindTranscript(claudeDir, row.SessionID, row.Workspace); err == nil {
		row.State, row.Transcript = stateResumable, p
	} else {
		row.State, row.Problem = stateNoTranscript, err.Error()
	}
	return row
}

// instanceState reads the pid the last holder wrote into the instance lock
// and asks whether it is alive. It takes no lock: a listing must never make
// a starting cc-connect fail. A pid reused by another program after a crash
// would read as running; doctor's lock check is the exact test.
func instanceState(stateDir string) instanceInfo {
	b, err := os.ReadFile(filepath.Join(stateDir, "locks", "instance.lock"))
	if err != nil {
		return instanceInfo{}
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return instanceInfo{}
	}
	err = syscall.Kill(pid, 0)
	if err == nil || errors.Is(err, syscall.EPERM) {
		return instanceInfo{Running: true, PID: pid}
	}
	return instanceInfo{}
}

func conversationName(s sessionRow) string {
	name := s.Platform + "/" + s.Channel
	if s.Thread != "" {
		name += "/" + s.Thread
	}
	return name
}

// writeSessions prints the report for a person: one table of
// conversations, then each workspace's transcripts.
func writeSessions(w io.Writer, rep sessionsReport, now time.Time) error {
	var b strings.Builder
	running := "not running"
	if rep.Instance.Running {
		running = fmt.Sprintf("running (pid %d)", rep.Instance.PID)
	}
	fmt.Fprintf(&b, "state dir %s: cc-connect %s\n\n", rep.StateDir, running)

	if len(rep.Sessions) == 0 {
		b.WriteString("No cc-connect sessions yet.\n")
	} else {
		fmt.Fprintf(&b, "cc-connect sessions (%d), most recent first:\n", len(rep.Sessions))
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PLATFORM\tCHANNEL\tTHREAD\tWORKSPACE\tSTATE\tCLAUDE SESSION\tLAST ACTIVITY\tCTX")
		for _, s := range rep.Sessions {
			if s.State == stateCorruptRecord {
				fmt.Fprintf(tw, "-\t-\t-\t%s\t%s\t-\t-\t-\n", s.File, s.State)
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d%%\n", s.Platform, s.Channel, orDash(s.Thread),
				s.Workspace, s.State, orDash(s.SessionID), ago(s.LastActivity, now), s.ContextPct)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		writeStateNotes(&b, rep.Sessions)
	}

	fmt.Fprintf(&b, "\nClaude Code transcripts in %s, newest first:\n", rep.ClaudeConfigDir)
	for _, ws := range rep.Workspaces {
		fmt.Fprintf(&b, "\n%s (%d)\n", ws.Workspace, len(ws.Transcripts))
		if ws.Error != "" {
			fmt.Fprintf(&b, "  cannot list: %s\n", ws.Error)
		}
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		for _, t := range ws.Transcripts {
			about := t.Title
			if about == "" {
				about = t.FirstPrompt
			}
			used := ""
			if t.Conversation != "" {
				used = "  ← " + t.Conversation
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s%s\n", t.SessionID, ago(t.ModTime, now), size(t.Size), quoteShort(about), used)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if err := writeRetiredWorktrees(&b, rep.RetiredWorktrees); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeStateNotes says, under the table, what the states that need a
// look mean for the next message.
func writeStateNotes(b *strings.Builder, rows []sessionRow) {
	missing := false
	for _, s := range rows {
		switch s.State {
		case stateCorruptRecord:
			fmt.Fprintf(b, "corrupt: %s: %s; the engine moves it aside and starts that conversation fresh\n", s.File, s.Problem)
		case stateNoTranscript:
			missing = true
		}
	}
	if missing {
		b.WriteString("transcript missing: Claude Code no longer has that session; the next message starts a fresh one and says so\n")
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ago shows a time as UTC with its age, to the minute.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	var rel string
	switch {
	case d < time.Minute:
		rel = "just now"
	case d < time.Hour:
		rel = fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		rel = fmt.Sprintf("%dh ago", int(d/time.Hour))
	default:
		rel = fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
	}
	return t.UTC().Format("2006-01-02 15:04") + " (" + rel + ")"
}

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// quoteShort quotes a prompt on one line, cut to fit a terminal row.
func quoteShort(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "-"
	}
	if r := []rune(s); len(r) > 60 {
		s = string(r[:59]) + "…"
	}
	return strconv.Quote(s)
}
