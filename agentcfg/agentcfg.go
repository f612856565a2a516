// Package agentcfg turns the config's [agent] section into agentproc's
// options: the binary starts the agent with them and doctor checks it with
// the same, so that neither config (which describes the agent) nor
// agentproc (which runs it) knows the other.
package agentcfg

import (
	"slices"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/config"
)

// From is how every agent process of cfg is started: the command and its
// arguments, the environment (agent.env revealed, agent.env_drop, and the
// config's secrets, which no child gets), the OS user (agent.user,
// resolved when the config was loaded) and the settings.
func From(cfg *config.Config) agentproc.Config {
	a := cfg.Agent
	return agentproc.Config{
		Command:            a.Command,
		Args:               slices.Clone(a.Args),
		Env:                a.EnvValues(),
		EnvDrop:            slices.Clone(a.EnvDrop),
		Secrets:            AddSecrets(agentproc.NewSecretVars(), cfg),
		User:               a.RunAs,
		Model:              a.Model,
		PermissionMode:     a.PermissionMode,
		AppendSystemPrompt: a.AppendSystemPrompt,
		CloseGrace:         a.CloseGrace.D(),
	}
}

// AddSecrets puts what cfg marks secret into s (the variables secrets are
// read from and the secrets' values) and returns s; a reload adds the new
// config's to the set the running children share.
func AddSecrets(s *agentproc.SecretVars, cfg *config.Config) *agentproc.SecretVars {
	s.Add(cfg.SecretVarNames()...)
	s.AddValues(cfg.SecretValues()...)
	return s
}
