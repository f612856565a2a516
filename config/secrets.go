package config

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/cc-connect/cc-connect/agentenv"
)

// Which secrets the agent must not get, and as whom it runs: the keys
// agent.env_drop and agent.user, and the variables that platform tokens are
// read from. agentproc applies the rule (agentenv) to every child; this file
// only finds the names and checks the keys.

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

// secretRefs maps each variable a platform token is read from to the
// first key that reads it.
func secretRefs(raw map[string]any) map[string]string {
	refs := map[string]string{}
	platforms, _ := raw["platforms"].([]any)
	for i, item := range platforms {
		p, _ := item.(map[string]any)
		for _, k := range tokenKeys {
			v, _ := p[k].(string)
			for _, name := range envRefs(v) {
				if _, seen := refs[name]; !seen {
					refs[name] = fmt.Sprintf("platforms[%d].%s", i, k)
				}
			}
		}
	}
	if len(refs) == 0 {
		return nil
	}
	return refs
}

// validateSecrets checks agent.env_drop and agent.user and keeps agent.env
// from handing the agent a platform token, through d; it returns the
// warnings for settings that weaken the default.
func (c *Config) validateSecrets(raw map[string]any, d *decoder) (warnings []string) {
	c.SecretVars = secretRefs(raw)
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

	// agent.env is the admin's word, but never for a platform token: the
	// agent would hand it to anyone who can ask Claude for printenv.
	rawEnv := map[string]any{}
	if agent, ok := raw["agent"].(map[string]any); ok {
		rawEnv, _ = agent["env"].(map[string]any)
	}
	tokens := map[string]string{} // value -> key
	for i, p := range c.Platforms {
		for _, t := range p.setTokens() {
			tokens[t.Value.Reveal()] = fmt.Sprintf("platforms[%d].%s", i, t.Key)
		}
	}
	c.checkEnvSecrets("agent.env", a.Env, rawEnv, tokens, d)
	bindings, _ := raw["bindings"].([]any)
	for i := range c.Bindings {
		var rawB map[string]any
		if i < len(bindings) {
			if m, ok := bindings[i].(map[string]any); ok {
				rawB, _ = m["env"].(map[string]any)
			}
		}
		c.checkEnvSecrets(fmt.Sprintf("bindings[%d].env", i), c.Bindings[i].Env, rawB, tokens, d)
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

// SecretVarNames lists the variables platform tokens are read from, sorted.
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

// checkEnvSecrets keeps an agent environment (agent.env, a binding's env)
// from handing the agent a platform token: by the variable's name, by a
// ${VAR} it takes, or by its value. rawEnv is the entry's raw table, for
// the references before expansion.
func (c *Config) checkEnvSecrets(prefix string, env map[string]Secret, rawEnv map[string]any, tokens map[string]string, d *decoder) {
	keys := slices.Sorted(maps.Keys(env))
	for _, k := range keys {
		key := prefix + "." + k
		if d.failed[prefix] || d.failed[key] {
			continue
		}
		if from, ok := c.SecretVars[k]; ok {
			d.failf(key, "%s is the variable %s is read from: the agent must not get a platform token", k, from)
			continue
		}
		val, _ := rawEnv[k].(string)
		if refs := envRefs(val); len(refs) > 0 {
			if i := slices.IndexFunc(refs, func(n string) bool { _, ok := c.SecretVars[n]; return ok }); i >= 0 {
				d.failf(key, "takes ${%s}, which %s is read from: the agent must not get a platform token", refs[i], c.SecretVars[refs[i]])
				continue
			}
		}
		if from, ok := tokens[env[k].Reveal()]; ok && env[k] != "" {
			d.failf(key, "holds the value of %s: the agent must not get a platform token", from)
		}
	}
}
