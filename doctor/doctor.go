// Package doctor checks, offline, that a cc-connect install can run: the
// config, the agent's OS user and environment, the claude CLI and its
// version, workspaces, the state dir, platform tokens and whether the
// agent can reach them, locks and the metrics address. It never sends a token
// anywhere nor calls an API, and it changes nothing but lock files (taken
// and released at once, as `run` would take them) and one probe file in the
// state dir. Each check is a Check value so tests need no binary; the
// `cc-connect doctor` command prints the Report.
package doctor

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/agentcfg"
	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/lease"
)

// Status is a check's verdict.
type Status string

// The verdicts. Only Fail makes the report (and the command) fail: a
// warning names something that may be intended or cannot be checked
// offline.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Check is one line of the report.
type Check struct {
	Name   string
	Status Status
	// Detail says what was found and, when something is wrong, what to do.
	// It never holds a secret.
	Detail string
}

// Symbol is the mark a check's line starts with.
func (s Status) Symbol() string {
	switch s {
	case OK:
		return "✓"
	case Warn:
		return "!"
	}
	return "✗"
}

// Report is every check, in the order they ran.
type Report struct {
	Checks []Check
}

// Failed reports whether any check failed.
func (r Report) Failed() bool { return r.Count(Fail) > 0 }

// Count returns how many checks have status s.
func (r Report) Count(s Status) int {
	n := 0
	for _, c := range r.Checks {
		if c.Status == s {
			n++
		}
	}
	return n
}

// Write prints one line per check (its detail's further lines indented)
// and a summary line.
func (r Report) Write(w io.Writer) error {
	var b strings.Builder
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "%s %s", c.Status.Symbol(), c.Name)
		if c.Detail != "" {
			// A detail of several lines (every problem of a config)
			// is indented under its check.
			fmt.Fprintf(&b, ": %s", strings.ReplaceAll(c.Detail, "\n", "\n    "))
		}
		b.WriteByte('\n')
	}
	ok, warn, fail := r.Count(OK), r.Count(Warn), r.Count(Fail)
	verdict := "ready to run"
	if fail > 0 {
		verdict = "fix the failures above before running"
	}
	fmt.Fprintf(&b, "\n%d ok, %d %s, %d %s: %s\n", ok, warn, plural(warn, "warning"), fail, plural(fail, "failure"), verdict)
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// Options adjust the checks for tests; the zero value checks this host.
type Options struct {
	// Environ is cc-connect's own environment, whose part the agent
	// inherits (agentproc.BuildEnv). nil means os.Environ().
	Environ []string
	// LookPath finds the claude executable. nil means exec.LookPath.
	LookPath func(string) (string, error)
	// HostLockDir is where token locks live. "" means lease.HostLocks()'s.
	HostLockDir string
	// hostLocksMoved says why lease.HostLocks passed over the usual
	// folder, when HostLockDir came from it.
	hostLocksMoved error
	// TestedVersion is the Claude Code version to compare with. "" means
	// agentproc.TestedClaudeVersion.
	TestedVersion string
	// VersionTimeout bounds `claude --version`. 0 means 15 seconds.
	VersionTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	if o.LookPath == nil {
		o.LookPath = exec.LookPath
	}
	if o.HostLockDir == "" {
		o.HostLockDir, o.hostLocksMoved = lease.HostLocks()
	}
	if o.TestedVersion == "" {
		o.TestedVersion = agentproc.TestedClaudeVersion
	}
	if o.VersionTimeout <= 0 {
		o.VersionTimeout = 15 * time.Second
	}
	return o
}

// LoadConfig loads the config at path and reports it as checks: one that
// passes or fails (naming every problem), then one warning per config
// warning. The config is nil when it failed.
func LoadConfig(path string) (*config.Config, []Check) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, []Check{{Name: "config", Status: Fail, Detail: err.Error()}}
	}
	checks := []Check{{Name: "config", Status: OK, Detail: fmt.Sprintf("%s (%d %s, %d %s)",
		cfg.Path, len(cfg.Platforms), plural(len(cfg.Platforms), "platform"), len(cfg.Bindings), plural(len(cfg.Bindings), "binding"))}}
	for _, w := range cfg.Warnings {
		checks = append(checks, Check{Name: "config", Status: Warn, Detail: w})
	}
	return cfg, checks
}

// Run checks everything a loaded config depends on, in the order an admin
// fixes them: the agent's user, the claude CLI, its login, workspaces, the
// state dir, tokens and what of them the agent can reach, locks and the
// metrics address.
func Run(ctx context.Context, cfg *config.Config, opts Options) Report {
	opts = opts.withDefaults()
	var r Report
	add := func(cs ...Check) { r.Checks = append(r.Checks, cs...) }
	agent := agentcfg.From(cfg)
	env := agentproc.BuildEnv(opts.Environ, agent)
	add(checkAgentUser(ctx, cfg, agent, env))
	add(checkAgentEnv(agent, opts.Environ))
	add(checkClaude(ctx, cfg, opts))
	add(checkLogin(cfg, opts))
	add(checkWorkspaces(cfg)...)
	add(checkStateDir(cfg.State.Dir))
	add(checkTokens(cfg)...)
	add(checkSecrets(ctx, cfg, agent, env))
	if c := checkClusterSeed(ctx, cfg, agent, env); c != nil {
		add(*c)
	}
	add(checkLocks(cfg, opts)...)
	add(checkMetrics(cfg))
	return r
}
