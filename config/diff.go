package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Changes is what differs between a running config and a newly loaded one,
// sorted by what a reload can do with it. It never holds a secret's value:
// a changed token is reported by key only.
type Changes struct {
	// Platforms are the [[platforms]] entries added, removed or changed
	// (any key: credentials, api_url, …), by name. A changed entry means
	// that adapter is rebuilt and restarted; the others keep running.
	PlatformsAdded   []string
	PlatformsRemoved []string
	PlatformsChanged []PlatformChange
	// Bindings are the [[bindings]] entries added, removed or changed,
	// identified by platform and channel.
	Bindings []BindingChange
	// LogLevel is set when log.level changed (it applies live).
	LogLevel bool
	// Chat lists the [chat] keys that changed (they apply live, from each
	// conversation's next turn).
	Chat []string
	// Restart lists the keys that changed but only take effect after a
	// restart (state.dir, log.format, agent.*, files.*, metrics.*, …).
	Restart []string
}

// PlatformChange is a changed [[platforms]] entry and the keys that changed.
type PlatformChange struct {
	Name string
	Keys []string
}

// BindingChange is one [[bindings]] entry that was added, removed or
// changed. Keys lists the changed keys of a changed entry.
type BindingChange struct {
	Platform, Channel string
	Kind              ChangeKind
	Keys              []string
}

// ChangeKind says what happened to an entry.
type ChangeKind string

// The kinds of change of an entry.
const (
	Added   ChangeKind = "added"
	Removed ChangeKind = "removed"
	Changed ChangeKind = "changed"
)

// liveSections are the top-level keys whose changes a reload applies (the
// lists are compared entry by entry; of [log] only the level applies live).
var liveSections = []string{"platforms", "bindings", "log", "chat"}

// Diff compares two loaded configs. Both must come from Load (validated,
// paths resolved), so that equal settings compare equal.
func Diff(old, cur *Config) Changes {
	var c Changes

	oldP := map[string]Platform{}
	for _, p := range old.Platforms {
		oldP[p.Name] = p
	}
	for _, p := range cur.Platforms {
		was, ok := oldP[p.Name]
		if !ok {
			c.PlatformsAdded = append(c.PlatformsAdded, p.Name)
			continue
		}
		if keys := changedKeys(reflect.ValueOf(was), reflect.ValueOf(p), ""); len(keys) > 0 {
			c.PlatformsChanged = append(c.PlatformsChanged, PlatformChange{Name: p.Name, Keys: keys})
		}
		delete(oldP, p.Name)
	}
	for _, p := range old.Platforms {
		if _, gone := oldP[p.Name]; gone {
			c.PlatformsRemoved = append(c.PlatformsRemoved, p.Name)
		}
	}

	type bkey struct{ platform, channel string }
	oldB := map[bkey]Binding{}
	for _, b := range old.Bindings {
		oldB[bkey{b.Platform, b.Channel}] = b
	}
	for _, b := range cur.Bindings {
		k := bkey{b.Platform, b.Channel}
		was, ok := oldB[k]
		delete(oldB, k)
		if !ok {
			c.Bindings = append(c.Bindings, BindingChange{Platform: b.Platform, Channel: b.Channel, Kind: Added})
			continue
		}
		if keys := changedKeys(reflect.ValueOf(was), reflect.ValueOf(b), ""); len(keys) > 0 {
			c.Bindings = append(c.Bindings, BindingChange{Platform: b.Platform, Channel: b.Channel, Kind: Changed, Keys: keys})
		}
	}
	for _, b := range old.Bindings {
		if _, gone := oldB[bkey{b.Platform, b.Channel}]; gone {
			c.Bindings = append(c.Bindings, BindingChange{Platform: b.Platform, Channel: b.Channel, Kind: Removed})
		}
	}

	c.LogLevel = old.Log.Level != cur.Log.Level
	c.Chat = changedKeys(reflect.ValueOf(old.Chat), reflect.ValueOf(cur.Chat), "chat")
	for _, f := range tomlFields(reflect.TypeFor[Config]()) {
		ov := reflect.ValueOf(*old).Field(f.index)
		nv := reflect.ValueOf(*cur).Field(f.index)
		switch {
		case f.key == "log":
			if old.Log.Format != cur.Log.Format {
				c.Restart = append(c.Restart, "log.format")
			}
		case slices.Contains(liveSections, f.key):
		default:
			c.Restart = append(c.Restart, changedKeys(ov, nv, f.key)...)
		}
	}
	return c
}

// changedKeys lists the keys (dotted, from the toml tags) whose values
// differ between two values of one struct type; a non-struct value is one
// key. Pointers are compared by what they point to.
func changedKeys(a, b reflect.Value, path string) []string {
	if a.Kind() != reflect.Struct || a.Type() == durationType {
		if reflect.DeepEqual(deref(a), deref(b)) {
			return nil
		}
		return []string{path}
	}
	var out []string
	for _, f := range tomlFields(a.Type()) {
		out = append(out, changedKeys(a.Field(f.index), b.Field(f.index), joinKey(path, f.key))...)
	}
	return out
}

func deref(v reflect.Value) any {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		return v.Elem().Interface()
	}
	if v.Kind() == reflect.Slice && v.Len() == 0 {
		return nil // an empty list and a missing one mean the same
	}
	if v.Kind() == reflect.Map && v.Len() == 0 {
		return nil
	}
	return v.Interface()
}

// Empty reports whether nothing changed.
func (c Changes) Empty() bool {
	return len(c.PlatformsAdded) == 0 && len(c.PlatformsRemoved) == 0 && len(c.PlatformsChanged) == 0 &&
		len(c.Bindings) == 0 && !c.LogLevel && len(c.Chat) == 0 && len(c.Restart) == 0
}

// Live reports whether any change applies without a restart.
func (c Changes) Live() bool {
	return len(c.PlatformsAdded) > 0 || len(c.PlatformsRemoved) > 0 || len(c.PlatformsChanged) > 0 ||
		len(c.Bindings) > 0 || c.LogLevel || len(c.Chat) > 0
}

// Summary describes each live change in one line, for the log. Values are
// left out (a changed key may be a token).
func (c Changes) Summary() []string {
	var out []string
	for _, n := range c.PlatformsAdded {
		out = append(out, fmt.Sprintf("platform %s added: its adapter starts", n))
	}
	for _, p := range c.PlatformsChanged {
		out = append(out, fmt.Sprintf("platform %s changed (%s): its adapter restarts", p.Name, strings.Join(p.Keys, ", ")))
	}
	for _, n := range c.PlatformsRemoved {
		out = append(out, fmt.Sprintf("platform %s removed: its adapter stops", n))
	}
	for _, b := range c.Bindings {
		switch b.Kind {
		case Added:
			out = append(out, fmt.Sprintf("binding %s/%s added: routes new messages now", b.Platform, b.Channel))
		case Removed:
			out = append(out, fmt.Sprintf("binding %s/%s removed: takes no more messages; its idle processes close", b.Platform, b.Channel))
		default:
			what := "applies to the next message"
			if slices.Contains(b.Keys, "workspace") {
				what = "the workspace applies from each conversation's next session; running turns finish first"
			}
			out = append(out, fmt.Sprintf("binding %s/%s changed (%s): %s", b.Platform, b.Channel, strings.Join(b.Keys, ", "), what))
		}
	}
	if c.LogLevel {
		out = append(out, "log.level changed: applies now")
	}
	if len(c.Chat) > 0 {
		out = append(out, fmt.Sprintf("%s changed: applies from each conversation's next turn", strings.Join(c.Chat, ", ")))
	}
	return out
}
