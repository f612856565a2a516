package main

import (
	"github.com/cc-connect/cc-connect/chatprompt"
	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/engine"
)

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
