package config

import (
	"cmp"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	// Time zones are named in [[schedules]] and [spend]; a host without
	// tzdata (a slim container) must still know them.
	_ "time/tzdata"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/schedule"
	"github.com/cc-connect/cc-connect/webhook"
)

// Schedule is one [[schedules]] entry: a prompt run on a calendar.
type Schedule struct {
	// Name identifies the schedule in chat (!schedules) and in run ids.
	Name string `toml:"name"`
	// Platform and Channel are where runs are posted; a binding must route
	// them. Thread, when set, is the thread every run continues in.
	Platform string `toml:"platform"`
	Channel  string `toml:"channel"`
	Thread   string `toml:"thread"`
	// Cron is a five-field cron expression (or @daily and friends), read
	// in Timezone ("Local" for the host's zone; or a CRON_TZ= prefix).
	Cron     string `toml:"cron"`
	Timezone string `toml:"timezone"`
	Prompt   string `toml:"prompt"`
	// Continue makes all runs one conversation instead of a new thread
	// each.
	Continue bool `toml:"continue"`
	// CatchUp is the age up to which a run missed while cc-connect was
	// down still runs at start-up.
	CatchUp Duration `toml:"catch_up"`
	// Overlap is "skip" or "wait": what a run does while the previous run
	// of its schedule still works.
	Overlap string `toml:"overlap"`
}

func defaultSchedule() Schedule {
	return Schedule{CatchUp: Duration(time.Hour), Overlap: string(schedule.OverlapSkip)}
}

// Webhooks configures the webhook listener ([webhooks]); off unless Addr
// is set.
type Webhooks struct {
	// Addr is host:port for POST /hooks/<name>; "" turns it off.
	Addr string `toml:"addr"`
	// AllowRemote permits an Addr other hosts can reach (as for metrics).
	AllowRemote bool `toml:"allow_remote"`
	// MaxBody bounds a request body.
	MaxBody Size `toml:"max_body"`
	// Hooks are the routes ([[webhooks.hooks]]).
	Hooks []Hook `toml:"hooks"`
}

// Hook is one [[webhooks.hooks]] route.
type Hook struct {
	Name   string `toml:"name"`
	Secret Secret `toml:"secret"`
	// Sender is how requests are signed: "github" (the default) or
	// "generic" (a signed timestamp and the body).
	Sender   string `toml:"sender"`
	Platform string `toml:"platform"`
	Channel  string `toml:"channel"`
	// Events is refused when set: X-GitHub-Event is not signed, so a
	// captured body could be sent again as another event. It is kept as a
	// key so that a config that has it is told why.
	Events []string `toml:"events"`
	// Filter, when set, is a template that must render "true".
	Filter Verbatim `toml:"filter"`
	// Prompt is the instruction to Claude; Template renders the body into
	// the data that follows it.
	Prompt   string   `toml:"prompt"`
	Template Verbatim `toml:"template"`
}

// Spend configures the spending ledger ([spend]); the caps are per binding.
type Spend struct {
	// Timezone is where days and months start for the caps.
	Timezone string `toml:"timezone"`
	// AdminsExempt lets a binding's admins start turns over its caps.
	AdminsExempt bool `toml:"admins_exempt"`
	// TurnReserveUSD is the least a turn reserves against the caps before
	// it starts (spend.Ledger.SetReserve).
	TurnReserveUSD USD `toml:"turn_reserve_usd"`
}

// USD is an amount in US dollars, written as a number (20, 7.5) or a
// string ("$20", "7.50").
type USD float64

// String writes the amount with cents.
func (u USD) String() string { return fmt.Sprintf("%.2f", float64(u)) }

// Verbatim is a string taken as written: no ${VAR} expansion, since Go
// templates use $ for their own variables.
type Verbatim string

func (d *decoder) decodeUSD(path string, val any, v reflect.Value) {
	var f float64
	switch n := val.(type) {
	case float64:
		f = n
	case string:
		// "$7.50" is a price, not an environment variable.
		if len(n) > 1 && n[0] == '$' && n[1] >= '0' && n[1] <= '9' {
			n = n[1:]
		}
		s, ok := d.expand(path, n)
		if !ok {
			return
		}
		p, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(s), "$"), 64)
		if err != nil {
			d.failf(path, "%q is not an amount in USD (write 20, 7.5 or \"$7.50\")", s)
			return
		}
		f = p
	default:
		i, ok := toInt64(val)
		if !ok {
			d.failf(path, "expected an amount in USD such as 20 or 7.5, got %s", describe(val))
			return
		}
		f = float64(i)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		d.failf(path, "must be 0 (no cap) or a positive amount, got %v", f)
		return
	}
	v.SetFloat(f)
}

// routes reports whether a binding takes messages of platform's channel.
func (c *Config) routes(platform, channel string) bool {
	_, ok := binding.Route(c.BindingSpecs(), platform, channel)
	return ok
}

// checkTarget checks the platform and channel of a schedule or a hook:
// concrete, and routed by a binding.
func checkTarget(c *Config, d *decoder, key, platform, channel string) {
	if d.failed[key+".platform"] || d.failed[key+".channel"] {
		return
	}
	switch {
	case platform == "":
		d.failf(key+".platform", "is required (the name of a [[platforms]] entry)")
	case c.platformType(platform) == "":
		d.failf(key+".platform", "%q is not the name of any [[platforms]] entry", platform)
	case channel == "" || channel == "*":
		d.failf(key+".channel", "is required: the id of the channel runs are posted in (not \"*\")")
	case c.platformType(platform) == TypeLocal && channel != "local":
		d.failf(key+".channel", `%q is not a channel of the local platform: write "local"`, channel)
	case !c.routes(platform, channel):
		d.failf(key+".channel", "no [[bindings]] entry routes %s/%s: add one, or bind its platform with channel = \"*\"", platform, channel)
	}
}

// validateUnattended checks [[schedules]], [webhooks], [spend] and the
// bindings' worktree and cap keys.
func validateUnattended(c *Config, d *decoder) (warnings []string) {
	bad := func(key string) bool { return d.failed[key] }
	names := map[string]int{}
	for i, s := range c.Schedules {
		key := fmt.Sprintf("schedules[%d]", i)
		switch {
		case bad(key + ".name"):
		case !schedule.NamePattern.MatchString(s.Name):
			d.failf(key+".name", "%q is not a name: letters, digits, '.', '_' and '-', at most 64, starting with a letter or digit", s.Name)
		default:
			if j, dup := names[s.Name]; dup {
				d.failf(key+".name", "%q is already used by schedules[%d]", s.Name, j)
			}
			names[s.Name] = i
		}
		checkTarget(c, d, key, s.Platform, s.Channel)
		if !bad(key+".cron") && !bad(key+".timezone") {
			if s.Cron == "" {
				d.failf(key+".cron", `is required, e.g. "30 2 * * *" (minute hour day month weekday)`)
			} else if _, err := schedule.ParseCron(s.Cron, s.Timezone); err != nil {
				d.failf(key+".cron", "%v", err)
			}
		}
		if !bad(key+".prompt") && strings.TrimSpace(s.Prompt) == "" {
			d.failf(key+".prompt", "is required (what Claude is asked to do at each run)")
		}
		if !bad(key+".thread") && s.Thread != "" && !s.Continue {
			d.failf(key+".thread", "names a thread to continue: set continue = true (or drop thread for a new thread each run)")
		}
		if !bad(key + ".catch_up") {
			switch {
			case s.CatchUp < 0:
				d.failf(key+".catch_up", "must be 0 or more, got %s", s.CatchUp)
			case !bad("state.seen_window") && s.CatchUp > c.State.SeenWindow:
				// Beyond the seen window a run resubmitted after a crash
				// could no longer be recognised as already journaled.
				d.failf(key+".catch_up", "%s is longer than state.seen_window (%s): runs could repeat after a crash; lower it or raise state.seen_window", s.CatchUp, c.State.SeenWindow)
			}
		}
		if !bad(key+".overlap") && s.Overlap != string(schedule.OverlapSkip) && s.Overlap != string(schedule.OverlapWait) {
			d.failf(key+".overlap", "%q is not skip or wait", s.Overlap)
		}
	}

	w := c.Webhooks
	if !bad("webhooks.addr") && w.Addr != "" {
		host, port, err := net.SplitHostPort(w.Addr)
		ip := net.ParseIP(host)
		switch {
		case err != nil || port == "":
			d.failf("webhooks.addr", "%q is not host:port (e.g. \"127.0.0.1:9465\")", w.Addr)
		case !w.AllowRemote && host != "localhost" && (ip == nil || !ip.IsLoopback()):
			d.failf("webhooks.addr", "%q can be reached from other hosts; use 127.0.0.1:%s behind a reverse proxy, or set webhooks.allow_remote = true", w.Addr, port)
		}
	}
	if !bad("webhooks.max_body") && (w.MaxBody <= 0 || w.MaxBody > 32<<20) {
		d.failf("webhooks.max_body", "must be between 1 byte and 32MiB, got %s", w.MaxBody)
	}
	hookNames := map[string]int{}
	secrets := map[string]int{}
	for i, h := range w.Hooks {
		key := fmt.Sprintf("webhooks.hooks[%d]", i)
		switch {
		case bad(key + ".name"):
		case !webhook.NamePattern.MatchString(h.Name):
			d.failf(key+".name", "%q is not a name: letters, digits, '.', '_' and '-', at most 64 (it is the URL path /hooks/<name>)", h.Name)
		default:
			if j, dup := hookNames[h.Name]; dup {
				d.failf(key+".name", "%q is already used by webhooks.hooks[%d]", h.Name, j)
			}
			hookNames[h.Name] = i
		}
		if !bad(key + ".secret") {
			if h.Secret == "" {
				d.failf(key+".secret", "is required: the shared secret the sender signs bodies with; keep it in the environment and write ${VAR}")
			} else if len(h.Secret.Reveal()) < 16 {
				warnings = append(warnings, fmt.Sprintf("%s.secret is shorter than 16 characters: anyone who guesses it can start runs", key))
			}
			if j, dup := secrets[h.Secret.Reveal()]; dup && h.Secret != "" {
				d.failf(key+".secret", "is the secret of webhooks.hooks[%d]: a body signed for one hook could be sent to the other; give each hook its own", j)
			} else {
				secrets[h.Secret.Reveal()] = i
			}
		}
		checkTarget(c, d, key, h.Platform, h.Channel)
		if !bad(key+".sender") && h.Sender != "" && h.Sender != string(webhook.SenderGitHub) && h.Sender != string(webhook.SenderGeneric) {
			d.failf(key+".sender", "%q is not github or generic", h.Sender)
		}
		if !bad(key+".events") && len(h.Events) > 0 {
			d.failf(key+".events", "is no longer taken: GitHub does not sign X-GitHub-Event, so a captured body could be sent again as another event; "+
				"remove it, choose the events in the webhook's settings on GitHub, and test the body in filter (e.g. '{{if index . \"workflow_run\"}}…')")
		}
		if !bad(key+".prompt") && strings.TrimSpace(h.Prompt) == "" {
			d.failf(key+".prompt", "is required (what Claude is asked to do with each request)")
		}
		if !bad(key + ".template") {
			if strings.TrimSpace(string(h.Template)) == "" {
				d.failf(key+".template", "is required: the text/template that turns the JSON body into the data Claude reads")
			} else if _, err := webhook.ParseTemplate(h.Name, string(h.Template)); err != nil {
				d.failf(key+".template", "%v", err)
			}
		}
		if !bad(key+".filter") && h.Filter != "" {
			if _, err := webhook.ParseTemplate(h.Name+" filter", string(h.Filter)); err != nil {
				d.failf(key+".filter", "%v", err)
			}
		}
	}
	if w.Addr != "" && len(w.Hooks) == 0 && !bad("webhooks.hooks") {
		warnings = append(warnings, "webhooks.addr is set but no [[webhooks.hooks]] entry exists: every request gets a 404")
	}
	if w.Addr == "" && len(w.Hooks) > 0 {
		warnings = append(warnings, "[[webhooks.hooks]] are configured but webhooks.addr is empty: nothing listens for them")
	}

	if !bad("spend.timezone") {
		if _, err := schedule.LoadZone(c.Spend.Timezone); err != nil {
			d.failf("spend.timezone", "%v", err)
		}
	}
	if !bad("spend.turn_reserve_usd") && c.Spend.TurnReserveUSD <= 0 {
		// Nothing reserved would let every thread that starts at once
		// pass the caps, as checking before and charging after did.
		d.failf("spend.turn_reserve_usd", "must be more than 0: what a turn reserves against the caps before it starts (about what one of your turns costs), got %s", c.Spend.TurnReserveUSD)
	}
	for i, b := range c.Bindings {
		key := fmt.Sprintf("bindings[%d]", i)
		if b.Worktree && !bad(key+".worktree") && !bad(key+".workspace") && b.Workspace != "" {
			if _, err := os.Stat(filepath.Join(b.Workspace, ".git")); err != nil {
				d.failf(key+".worktree", "%s is not the top folder of a git repository (no .git): worktrees need one", b.Workspace)
			}
		}
	}
	return warnings
}

// writeUnattended adds a binding's worktree and cap keys to String's TOML.
func (b Binding) writeUnattended(w *strings.Builder) {
	if b.Worktree {
		w.WriteString("worktree = true\n")
	}
	for _, c := range []struct {
		key string
		val USD
	}{{"cap_daily_usd", b.CapDailyUSD}, {"cap_monthly_usd", b.CapMonthlyUSD},
		{"cap_user_daily_usd", b.CapUserDailyUSD}, {"cap_user_monthly_usd", b.CapUserMonthlyUSD}} {
		if c.val > 0 {
			fmt.Fprintf(w, "%s = %s\n", c.key, c.val)
		}
	}
}

// writeUnattended adds [spend], [webhooks] and [[schedules]] to String's
// TOML; hook secrets appear as Redacted.
func (c *Config) writeUnattended(w *strings.Builder) {
	q := strconv.Quote
	fmt.Fprintf(w, "\n[spend]\ntimezone = %s\nadmins_exempt = %t\nturn_reserve_usd = %s\n", q(c.Spend.Timezone), c.Spend.AdminsExempt, c.Spend.TurnReserveUSD)
	if c.Webhooks.Addr != "" || len(c.Webhooks.Hooks) > 0 {
		fmt.Fprintf(w, "\n[webhooks]\naddr = %s\nallow_remote = %t\nmax_body = %s\n", q(c.Webhooks.Addr), c.Webhooks.AllowRemote, q(c.Webhooks.MaxBody.String()))
		for _, h := range c.Webhooks.Hooks {
			fmt.Fprintf(w, "\n[[webhooks.hooks]]\nname = %s\nsecret = %s\nsender = %s\nplatform = %s\nchannel = %s\nfilter = %s\nprompt = %s\ntemplate = %s\n",
				q(h.Name), q(h.Secret.String()), q(cmp.Or(h.Sender, string(webhook.SenderGitHub))), q(h.Platform), q(h.Channel), q(string(h.Filter)), q(h.Prompt), q(string(h.Template)))
		}
	}
	for _, s := range c.Schedules {
		fmt.Fprintf(w, "\n[[schedules]]\nname = %s\nplatform = %s\nchannel = %s\n", q(s.Name), q(s.Platform), q(s.Channel))
		if s.Thread != "" {
			fmt.Fprintf(w, "thread = %s\n", q(s.Thread))
		}
		fmt.Fprintf(w, "cron = %s\ntimezone = %s\nprompt = %s\ncontinue = %t\ncatch_up = %s\noverlap = %s\n",
			q(s.Cron), q(s.Timezone), q(s.Prompt), s.Continue, q(s.CatchUp.String()), q(s.Overlap))
	}
}
