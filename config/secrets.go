package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/cc-connect/cc-connect/agentenv"
)

// Which secrets the agent must not get, and as whom it runs: the keys
// agent.env_drop and agent.user, and what the config marks secret. A
// secret is a platform token, a webhook's secret, the cluster's NKey seed
// and user JWT (read from cluster.creds_file or cluster.nkey_seed_file),
// and every environment variable a platform token or a webhook secret is
// read from (${VAR}). launch applies the rule (agentenv) to every child:
// no child gets such a variable, nor any variable whose value is a
// secret's. This file only finds them and checks the keys.

// tokenKeys are the [[platforms]] keys that hold a secret.
var tokenKeys = []string{"bot_token", "app_token", "token"}

// envRefs lists the variable names s refers to as ${NAME}, in order. It
// follows expandEnv's reading ("$$" is a literal $) and skips what
// expandEnv would refuse.
func envRefs(s string) []string {
	var names []string
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			continue
		}
		if s[i+1] == '$' {
			i++
			continue
		}
		if s[i+1] != '{' {
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return names
		}
		if name := s[i+2 : i+2+end]; validEnvName(name) {
			names = append(names, name)
		}
		i += 2 + end
	}
	return names
}

// secretRefs maps each variable a secret is read from (a platform token,
// a webhook secret) to the first key that reads it. The cluster's files
// are not here: their variables hold paths (often ${HOME}), and what is
// secret is the files' content (SecretValues).
func secretRefs(raw map[string]any) map[string]string {
	refs := map[string]string{}
	add := func(key string, v any) {
		s, _ := v.(string)
		for _, name := range envRefs(s) {
			if _, seen := refs[name]; !seen {
				refs[name] = key
			}
		}
	}
	platforms, _ := raw["platforms"].([]any)
	for i, item := range platforms {
		p, _ := item.(map[string]any)
		for _, k := range tokenKeys {
			add(fmt.Sprintf("platforms[%d].%s", i, k), p[k])
		}
	}
	for i, h := range rawHooks(raw) {
		add(fmt.Sprintf("webhooks.hooks[%d].secret", i), h["secret"])
	}
	if len(refs) == 0 {
		return nil
	}
	return refs
}

// rawHooks are the [[webhooks.hooks]] tables of the raw tree.
func rawHooks(raw map[string]any) []map[string]any {
	wh, _ := raw["webhooks"].(map[string]any)
	items, _ := wh["hooks"].([]any)
	out := make([]map[string]any, len(items))
	for i, item := range items {
		out[i], _ = item.(map[string]any)
	}
	return out
}

// secretValues maps each secret's value to the key it comes from: the
// platform tokens, the webhook secrets, the values of the variables they
// are read from, and the seed and JWT in the cluster's credential files (when this user can read them: `check` as
// another user may not, and `run` reads them for the cluster anyway).
func (c *Config) secretValues() map[string]string {
	vals := map[string]string{}
	add := func(v, key string) {
		if _, seen := vals[v]; v != "" && !seen {
			vals[v] = key
		}
	}
	for i, p := range c.Platforms {
		for _, t := range p.setTokens() {
			add(t.Value.Reveal(), fmt.Sprintf("platforms[%d].%s", i, t.Key))
		}
	}
	for i, h := range c.Webhooks.Hooks {
		add(h.Secret.Reveal(), fmt.Sprintf("webhooks.hooks[%d].secret", i))
	}
	for name, v := range c.SecretVarValues {
		add(v.Reveal(), "${"+name+"}")
	}
	if cl := c.Cluster; cl != nil {
		for _, f := range []struct{ key, path string }{{"cluster.creds_file", cl.CredsFile}, {"cluster.nkey_seed_file", cl.NKeySeedFile}} {
			if f.path == "" {
				continue
			}
			data, err := os.ReadFile(f.path)
			if err != nil {
				continue
			}
			for line := range strings.SplitSeq(string(data), "\n") {
				if line = strings.TrimSpace(line); natsSecretLine.MatchString(line) {
					add(line, f.key)
				}
			}
		}
	}
	return vals
}

// natsSecretLine is an NKey seed (S, the key type, base32) or a JWT, the
// secrets of a NATS credentials file.
var natsSecretLine = regexp.MustCompile(`^(S[A-Z][A-Z2-7]{56}|eyJ[A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]+)$`)

// SecretValues lists the values of every secret of the config (see
// secretValues), for the launcher's digests; never for printing.
func (c *Config) SecretValues() []string {
	vals := c.secretValues()
	out := make([]string, 0, len(vals))
	for v := range vals {
		out = append(out, v)
	}
	return out
}

// validateSecrets checks agent.env_drop and agent.user and keeps agent.env
// from handing the agent a platform token, through d; it returns the
// warnings for settings that weaken the default.
func validateSecrets(c *Config, raw map[string]any, d *decoder) (warnings []string) {
	c.SecretVars = secretRefs(raw)
	// What those variables held when the file was read is secret too: a
	// copy of it under another name is a copy of (part of) a token.
	for name := range c.SecretVars {
		if v, ok := d.lookup(name); ok && v != "" {
			if c.SecretVarValues == nil {
				c.SecretVarValues = map[string]Secret{}
			}
			c.SecretVarValues[name] = Secret(v)
		}
	}
	c.LiteralSecrets = literalSecrets(raw)
	a := &c.Agent

	if !d.failed["agent.env_drop"] {
		for i, entry := range a.EnvDrop {
			if err := agentenv.CheckEnvPattern(entry); err != nil {
				d.failf(fmt.Sprintf("agent.env_drop[%d]", i), "%v", err)
			}
		}
		var left []string
		for _, def := range agentenv.DefaultEnvDrop {
			if !slices.ContainsFunc(a.EnvDrop, func(e string) bool { return strings.EqualFold(e, def) }) {
				left = append(left, def)
			}
		}
		if len(left) > 0 {
			warnings = append(warnings, fmt.Sprintf("agent.env_drop leaves out %s of the default list: such variables of cc-connect's environment reach the agent, and Claude can print them in a chat. "+
				"Keep the default entries and give the agent the one variable it needs in agent.env", strings.Join(left, ", ")))
		}
	}

	// agent.env is the admin's word, but never for a secret: the agent
	// would hand it to anyone who can ask Claude for printenv.
	rawEnv := map[string]any{}
	if agent, ok := raw["agent"].(map[string]any); ok {
		rawEnv, _ = agent["env"].(map[string]any)
	}
	tokens := c.secretValues() // value -> key
	checkEnvSecrets(c, "agent.env", a.Env, rawEnv, tokens, d)
	bindings, _ := raw["bindings"].([]any)
	for i := range c.Bindings {
		var rawB map[string]any
		if i < len(bindings) {
			if m, ok := bindings[i].(map[string]any); ok {
				rawB, _ = m["env"].(map[string]any)
			}
		}
		checkEnvSecrets(c, fmt.Sprintf("bindings[%d].env", i), c.Bindings[i].Env, rawB, tokens, d)
	}

	if !d.failed["agent.user"] && strings.TrimSpace(a.User) != "" {
		u, err := agentenv.LookupUser(a.User)
		if err != nil {
			d.failf("agent.user", "%v", err)
		} else {
			a.RunAs = u
		}
	}
	return warnings
}

// SecretVarNames lists the variables secrets are read from, sorted.
func (c *Config) SecretVarNames() []string {
	names := make([]string, 0, len(c.SecretVars))
	for n := range c.SecretVars {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// CheckAgentUser reports, naming the key, when agent.user cannot take
// effect because cc-connect does not run as root (agentenv.ErrNotRoot).
// Loading does not check it, so that a file meant for root can be loaded
// (and checked, with a warning) from an ordinary account: run refuses to
// start on it, doctor reports it.
func (c *Config) CheckAgentUser() error {
	if err := agentenv.CheckSwitch(c.Agent.RunAs); err != nil {
		return fmt.Errorf("agent.user: %w", err)
	}
	return nil
}

// ErrRootAgent means cc-connect runs as root and so would the agent, while
// the config takes input from others; run refuses to start unless
// agent.allow_root says the admin knows (CheckRoot).
var ErrRootAgent = errors.New("the agent would run as root")

// RootExposed reports whether the agent runs as root (cc-connect does,
// and agent.user is unset or root) while the config serves more than the
// terminal: a chat platform, a webhook listener or a cluster. Claude's
// Bash then runs as root, where nothing keeps a secret from it: it reads
// /proc/<cc-connect pid>/environ (being not dumpable stops other users,
// not root), the config file and every file of the host, and anyone it
// answers can ask it to post them. The terminal alone is not exposed: it
// holds no token, and whoever types there started cc-connect as root.
func (c *Config) RootExposed() (bool, string) {
	if os.Geteuid() != 0 || (c.Agent.RunAs != nil && c.Agent.RunAs.UID != 0) {
		return false, ""
	}
	var what []string
	for _, p := range c.Platforms {
		if p.Type != TypeLocal {
			what = append(what, "platform "+p.Name)
		}
	}
	if c.Webhooks.Addr != "" {
		what = append(what, "the webhook listener")
	}
	if c.Cluster != nil {
		what = append(what, "the cluster")
	}
	if len(what) == 0 {
		return false, ""
	}
	return true, strings.Join(what, ", ")
}

// CheckRoot reports, naming agent.allow_root, when the agent would run as
// root serving others (RootExposed) without the admin's opt-in; the error
// wraps ErrRootAgent and says what to do. run refuses to start on it, a
// reload may not bring it about, check warns and doctor fails.
func (c *Config) CheckRoot() error {
	exposed, what := c.RootExposed()
	if !exposed || c.Agent.AllowRoot {
		return nil
	}
	return fmt.Errorf("agent.allow_root: %w: cc-connect runs as root and agent.user is not set, so Claude's Bash would run as root "+
		"and could read every token (from /proc/<cc-connect pid>/environ, the config file, any file) and post it in a chat, for %s. "+
		"Set agent.user to a user of its own (docs/operations.md), or set agent.allow_root = true to accept it", ErrRootAgent, what)
}

// checkEnvSecrets keeps an agent environment (agent.env, a binding's env)
// from handing the agent a secret: by the variable's name, by a ${VAR} it
// takes, or by its value. rawEnv is the entry's raw table, for
// the references before expansion.
func checkEnvSecrets(c *Config, prefix string, env map[string]Secret, rawEnv map[string]any, tokens map[string]string, d *decoder) {
	keys := slices.Sorted(maps.Keys(env))
	for _, k := range keys {
		key := prefix + "." + k
		if d.failed[prefix] || d.failed[key] {
			continue
		}
		if from, ok := c.SecretVars[k]; ok {
			d.failf(key, "%s is the variable %s is read from: the agent must not get a secret", k, from)
			continue
		}
		val, _ := rawEnv[k].(string)
		if refs := envRefs(val); len(refs) > 0 {
			if i := slices.IndexFunc(refs, func(n string) bool { _, ok := c.SecretVars[n]; return ok }); i >= 0 {
				d.failf(key, "takes ${%s}, which %s is read from: the agent must not get a secret", refs[i], c.SecretVars[refs[i]])
				continue
			}
		}
		if from, ok := tokens[env[k].Reveal()]; ok && env[k] != "" {
			d.failf(key, "holds the value of %s: the agent must not get a secret", from)
		}
	}
}
