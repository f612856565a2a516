package main

import (
	"github.com/cc-connect/cc-connect/chatprompt"
	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/engine"
)

// engineSetup is a binding's own agent setup and team switches for the
// engine: the keys it overrides, nil where it keeps [agent] and [files].
func engineSetup(b config.Binding) engine.Setup {
	s := engine.Setup{
		Model:                    b.Model,
		PermissionMode:           b.PermissionMode,
		AllowedModes:             b.AllowedModes,
		AppendSystemPrompt:       b.AppendSystemPrompt,
		Args:                     b.Args,
		MaxProcessesPerWorkspace: b.MaxProcessesPerWorkspace,
		SenderHeader:             b.SenderHeader,
		NotifyMention:            b.NotifyMention,
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
		src *config.Size
		dst **int64
	}{{b.ArtifactQuota, &s.ArtifactQuota}, {b.AttachmentMaxSize, &s.AttachmentMaxBytes}, {b.SendFileMaxSize, &s.SendFileMaxBytes}} {
		if sz.src != nil {
			n := int64(*sz.src)
			*sz.dst = &n
		}
	}
	return s
}

// teamOptions are the [chat] keys and files.send_file_max_size for the
// engine.
func teamOptions(cfg *config.Config) engine.TeamOptions {
	return engine.TeamOptions{
		NotifyAfter:          cfg.Chat.NotifyAfter.D(),
		ThreadContext:        chatprompt.Bounds{Messages: cfg.Chat.ThreadContextMessages, Bytes: int(cfg.Chat.ThreadContextBytes)},
		ThreadContextOnFresh: cfg.Chat.ThreadContextOnFresh,
		SendFileMaxBytes:     int64(cfg.Files.SendFileMaxSize),
	}
}
