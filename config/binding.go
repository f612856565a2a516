package config

import (
	"slices"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/spend"
)

// BindingSpecs are the [[bindings]] entries as the program runs them: the
// engine serves them, the cluster places them, validation routes by them.
func (c *Config) BindingSpecs() []binding.Binding {
	bindings := make([]binding.Binding, len(c.Bindings))
	for i, b := range c.Bindings {
		bindings[i] = binding.Binding{
			Platform:       b.Platform,
			Channel:        b.Channel,
			Workspace:      b.Workspace,
			AllowUsers:     append([]string(nil), b.AllowUsers...),
			Admins:         append([]string(nil), b.Admins...),
			Approvers:      append([]string(nil), b.Approvers...),
			RequireMention: b.RequireMention,
			AllowShell:     b.AllowShell,
			Worktree:       b.Worktree,
			Caps: spend.Caps{Daily: float64(b.CapDailyUSD), Monthly: float64(b.CapMonthlyUSD),
				UserDaily: float64(b.CapUserDailyUSD), UserMonthly: float64(b.CapUserMonthlyUSD)},
			Progress:  b.ProgressOf(),
			FollowUps: b.FollowUpsOf(),
			Setup:     b.setup(),
			Host:      b.Host,
			Standby:   slices.Clone(b.Standby),
		}
	}
	return bindings
}

// setup is a binding's own agent setup and team switches: the keys it
// overrides, nil where it keeps [agent] and [files].
func (b Binding) setup() binding.Setup {
	s := binding.Setup{
		Model:                    b.Model,
		PermissionMode:           b.PermissionMode,
		AllowedModes:             b.AllowedModes,
		AppendSystemPrompt:       b.AppendSystemPrompt,
		Args:                     b.Args,
		MaxProcessesPerWorkspace: b.MaxProcessesPerWorkspace,
		SenderHeader:             b.SenderHeader,
		NotifyMention:            b.NotifyMention,
		Checkpoints:              b.Checkpoints,
	}
	if len(b.Env) > 0 {
		s.Env = make(map[string]string, len(b.Env))
		for k, v := range b.Env {
			s.Env[k] = v.Reveal()
		}
	}
	if v := b.ArtifactThreshold; v != nil {
		n := int(*v)
		s.ArtifactThreshold = &n
	}
	for _, sz := range []struct {
		src *Size
		dst **int64
	}{{b.ArtifactQuota, &s.ArtifactQuota}, {b.AttachmentMaxSize, &s.AttachmentMaxBytes}, {b.SendFileMaxSize, &s.SendFileMaxBytes}} {
		if sz.src != nil {
			n := int64(*sz.src)
			*sz.dst = &n
		}
	}
	return s
}
