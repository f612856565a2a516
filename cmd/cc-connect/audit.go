package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/agentenv"
	"github.com/cc-connect/cc-connect/audit"
	"github.com/cc-connect/cc-connect/config"
)

// newFeed is the activity feed of a run, redacting what cfg marks secret
// (the returned Redactor, which a reload adds to).
func newFeed(cfg *config.Config) (*activity.Feed, *agentenv.Redactor) {
	r := &agentenv.Redactor{}
	r.Add(cfg.SecretValues()...)
	return &activity.Feed{Redact: r.Redact}, r
}

// startAudit starts the audit trail on feed when [audit] is on; the
// returned trail (nil when off) is closed after the engine.
func startAudit(cfg *config.Config, feed *activity.Feed, log *slog.Logger) (*audit.Trail, error) {
	if !cfg.Audit.Enabled {
		log.Info("The audit trail is off (audit.enabled = false)")
		return nil, nil
	}
	t := audit.New(audit.Options{Path: cfg.Audit.Path, MaxSize: int64(cfg.Audit.MaxSize), Keep: cfg.Audit.Keep, Log: log})
	if err := t.Start(); err != nil {
		return nil, err
	}
	feed.Subscribe(t)
	log.Info("Writing the audit trail", "path", cfg.Audit.Path)
	return t, nil
}

const auditUsage = `Usage: cc-connect audit [--config FILE] [--conversation KEY] [--user USER] [--since T] [--until T] [--kind K,...] [--json]

Prints the audit trail (audit.path), oldest first, one event a line.
  --conversation  a conversation's key (platform/channel/thread), or platform/channel for all its threads
  --user          a user's id or name
  --since/--until a time (RFC 3339, "2006-01-02", "2006-01-02 15:04") or a duration back from now ("2h", "7d")
  --kind          kinds, comma-separated: asked, started, finished, tool, asking, answered, shell,
                  scheduled, webhook, stopped, reloaded, rights, lease, lost
  --json          print the events as JSON lines, as stored
`

// auditMain is `cc-connect audit`.
func auditMain(_ context.Context, configPath string, args []string, std stdio) int {
	fs := flag.NewFlagSet("cc-connect audit", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), auditUsage) }
	path := fs.String("config", configPath, "config file")
	conv := fs.String("conversation", "", "conversation key")
	user := fs.String("user", "", "user id or name")
	since := fs.String("since", "", "from this time")
	until := fs.String("until", "", "before this time")
	kinds := fs.String("kind", "", "kinds, comma-separated")
	asJSON := fs.Bool("json", false, "JSON lines")
	if code, ok := parseFlags(fs, args, std); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(std.Err, "cc-connect audit: unexpected argument %q\n\n%s", fs.Arg(0), auditUsage)
		return exitUsage
	}
	now := time.Now()
	f := audit.Filter{Conversation: *conv, User: *user}
	var err error
	if f.Since, err = parseWhen(*since, now); err != nil {
		fmt.Fprintf(std.Err, "cc-connect audit: --since: %v\n", err)
		return exitUsage
	}
	if f.Until, err = parseWhen(*until, now); err != nil {
		fmt.Fprintf(std.Err, "cc-connect audit: --until: %v\n", err)
		return exitUsage
	}
	if f.Kinds, err = parseKinds(*kinds); err != nil {
		fmt.Fprintf(std.Err, "cc-connect audit: --kind: %v\n", err)
		return exitUsage
	}
	cfg := loadConfig(*path, std.Err)
	if cfg == nil {
		return exitUsage
	}
	if !cfg.Audit.Enabled {
		fmt.Fprintf(std.Err, "note: audit.enabled is false: nothing new is written to %s\n", cfg.Audit.Path)
	}
	bad, err := audit.Read(cfg.Audit.Path, f, func(e activity.Event) error {
		if *asJSON {
			b, err := json.Marshal(e)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(std.Out, "%s\n", b)
			return err
		}
		_, err := fmt.Fprintln(std.Out, audit.Format(e))
		return err
	})
	if bad > 0 {
		fmt.Fprintf(std.Err, "warning: %d lines of the audit trail could not be read (cut short by a crash?)\n", bad)
	}
	if err != nil {
		fmt.Fprintf(std.Err, "cc-connect audit: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// parseWhen reads a --since or --until: a time, a date, or a duration
// back from now ("7d" is seven days).
func parseWhen(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		var days int
		if _, err := fmt.Sscanf(n, "%d", &days); err == nil && fmt.Sprint(days) == n && days >= 0 {
			return now.AddDate(0, 0, -days), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither a time (2006-01-02T15:04:05Z, 2006-01-02 15:04, 2006-01-02) nor a duration (90m, 2h, 7d)", s)
}

// auditKinds are the kinds the trail keeps, for --kind.
var auditKinds = []activity.Kind{activity.Asked, activity.Started, activity.Finished, activity.Tool, activity.Asking,
	activity.Answered, activity.Shell, activity.Scheduled, activity.Webhook, activity.Stopped, activity.Reverted,
	activity.Reloaded, activity.Rights, activity.Lease, audit.Lost}

func parseKinds(s string) ([]activity.Kind, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []activity.Kind
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		found := false
		for _, known := range auditKinds {
			if string(known) == k {
				out, found = append(out, known), true
			}
		}
		if !found {
			names := make([]string, len(auditKinds))
			for i, k := range auditKinds {
				names[i] = string(k)
			}
			return nil, fmt.Errorf("%q is not one of %s", k, strings.Join(names, ", "))
		}
	}
	return out, nil
}
