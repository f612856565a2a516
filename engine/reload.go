package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/workspace"
)

// Hot reload. The binary builds and validates a whole new config, then
// hands the engine the parts that apply live (Reload): the bindings and the
// adapters that are new or whose settings changed.
//
// Bindings swap at once: routing and who may do what (allow lists,
// approvers, admins, allow_shell) are read from the bindings in force at
// every use (session.liveBinding), so a right taken away applies to the
// next command. What a session holds for its lifetime (its workspace, its
// adapter) cannot change under it, so a conversation whose workspace
// changed, or whose binding was removed, or whose adapter restarted, is
// marked to rebind: it finishes the work it has (the running turn and what
// is queued behind it), then closes its process and ends, and its next
// message starts a session under the new config. An idle conversation does
// so at once.

// Reload is a change of configuration for a running engine.
type Reload struct {
	// Bindings is the complete new list; it replaces the current one.
	Bindings []binding.Binding
	// Adapters are adapters to add, or to replace the running adapter of
	// the same Name (stopped first, then the new one started).
	Adapters []platform.Adapter
	// Remove names adapters to stop and forget.
	Remove []string
	// Team, when set, replaces the [chat] settings; each conversation's
	// next turn reads them (nil keeps those in force).
	Team *TeamOptions
	// Changes says what changed, one line each as the config's diff
	// words it, for the activity feed's "reloaded"; no secret.
	Changes []string
}

// checkBindings applies New's checks to a binding list.
func checkBindings(bs []binding.Binding) error {
	for i, b := range bs {
		if b.Platform == "" || b.Channel == "" || b.Workspace == "" {
			return fmt.Errorf("engine: bindings[%d]: platform, channel and workspace are required", i)
		}
	}
	return nil
}

// Reload applies a new configuration while the engine runs (or before Run).
// Invalid bindings are refused before anything changes. Conversations
// affected are told in their thread where a running turn must finish first.
// It returns when the replaced adapters have stopped (or ctx ends) and the
// new ones are started.
func (e *Engine) Reload(ctx context.Context, r Reload) error {
	if err := checkBindings(r.Bindings); err != nil {
		return err
	}
	for i, a := range r.Adapters {
		if a == nil || a.Name() == "" {
			return fmt.Errorf("engine: reload: adapters[%d] has no name", i)
		}
	}
	e.reloading.Lock()
	defer e.reloading.Unlock()

	bs := slices.Clone(r.Bindings)
	e.routes.pool.forget()
	for i := range bs {
		// Normalized once here, so that comparing with a session's
		// workspace compares folders, not spellings.
		bs[i].Workspace = workspace.Normalize(bs[i].Workspace, e.log)
	}
	restarted := map[string]bool{}
	for _, a := range r.Adapters {
		restarted[a.Name()] = true
	}
	for _, n := range r.Remove {
		restarted[n] = true
	}
	old := e.routes.all()
	e.routes.swap(bs, r.Team)
	publishReload(activity.Or(e.opts.Activity), e.now(), old, bs, r.Changes)
	// Spares were started under the old config: none outlives it.
	agent := e.opts.Agent
	e.spare.Renew(&agent)
	e.convs.Rebind(bs, restarted)
	return e.ads.swap(ctx, r.Adapters, r.Remove)
}

// NotifyAdmins posts text once per platform, in the conversation most
// recently active among those whose binding names admins, addressed to
// them. It returns the platforms told; a platform without such a
// conversation in memory is not told (the caller logs in any case). Chat
// has no admin inbox common to all platforms, so this is the one place an
// admin is sure to look without a DM target.
func (e *Engine) NotifyAdmins(ctx context.Context, text string) []string {
	return e.convs.NotifyAdmins(text)
}

// publishReload publishes a reload, and a rights event for each binding
// whose rights it changed: who may use it, approve, administer, run !sh.
func publishReload(sink activity.Sink, now time.Time, old, cur []binding.Binding, changes []string) {
	sink.Record(activity.Event{Time: now, Kind: activity.Reloaded, Input: strings.Join(changes, "; ")})
	for _, rc := range rightsChanges(old, cur) {
		sink.Record(activity.Event{Time: now, Kind: activity.Rights, Binding: rc.Binding, Platform: rc.Platform, Input: rc.Change})
	}
}

// rightsChange is what a reload changed in one binding's rights.
type rightsChange struct {
	Binding  string // platform/channel, as the config writes it
	Platform string
	Change   string // "admins: +U3 -U1; allow_shell: false → true"
}

// rightsChanges compares the rights of the bindings in old and cur, by
// platform and channel: a binding added or removed, and for one in both
// each list's additions and removals and allow_shell.
func rightsChanges(old, cur []binding.Binding) []rightsChange {
	key := func(b binding.Binding) string { return b.Platform + "/" + b.Channel }
	was := map[string]binding.Binding{}
	for _, b := range old {
		was[key(b)] = b
	}
	var out []rightsChange
	for _, b := range cur {
		o, ok := was[key(b)]
		delete(was, key(b))
		var parts []string
		if !ok {
			parts = append(parts, "added")
			o = binding.Binding{}
		}
		for _, l := range []struct {
			name     string
			old, new []string
		}{
			{"allow_users", o.AllowUsers, b.AllowUsers},
			{"approvers", o.Approvers, b.Approvers},
			{"admins", o.Admins, b.Admins},
		} {
			if d := listChange(l.old, l.new); d != "" {
				parts = append(parts, l.name+": "+d)
			}
		}
		if o.AllowShell != b.AllowShell {
			parts = append(parts, fmt.Sprintf("allow_shell: %t → %t", o.AllowShell, b.AllowShell))
		}
		if len(parts) > 0 {
			out = append(out, rightsChange{Binding: key(b), Platform: b.Platform, Change: strings.Join(parts, "; ")})
		}
	}
	for _, b := range old {
		if _, gone := was[key(b)]; gone {
			out = append(out, rightsChange{Binding: key(b), Platform: b.Platform, Change: "removed"})
		}
	}
	return out
}

// listChange says what was added to and removed from a list: "+a -b".
func listChange(old, cur []string) string {
	var parts []string
	for _, x := range cur {
		if !slices.Contains(old, x) {
			parts = append(parts, "+"+x)
		}
	}
	for _, x := range old {
		if !slices.Contains(cur, x) {
			parts = append(parts, "-"+x)
		}
	}
	return strings.Join(parts, " ")
}
