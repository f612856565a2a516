package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"

	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/discord"
	"github.com/cc-connect/cc-connect/platform/local"
	"github.com/cc-connect/cc-connect/platform/slack"
	"github.com/cc-connect/cc-connect/platform/telegram"
)

// adapterDeps is what the binary hands the adapter constructors besides the
// platform's own config entry.
type adapterDeps struct {
	Stdin       io.Reader
	Stdout      io.Writer
	Stderr      io.Writer
	Interactive bool       // stdin is a terminal
	Terminal    bool       // stdout is a terminal too: the terminal chat streams
	Width       func() int // the terminal's columns now; nil when not one
	User        string     // the local user's name
	// OnEOF is called by the terminal chat at the end of input.
	OnEOF func(ctx context.Context)
	Log   *slog.Logger
	// Observer, when set, is given to adapters that report connection
	// errors and reconnects (platform.Observed): the metrics.
	Observer platform.Observer
	// Cluster: the adapters' handler publishes to a cluster's stream
	// (cluster_run.go).
	Cluster bool
}

// adapterFactory builds one adapter from its [[platforms]] entry. It must
// not start anything: the engine runs the adapter.
type adapterFactory func(p config.Platform, deps adapterDeps) (platform.Adapter, error)

// adapterFactories are the platform types compiled into this binary. A
// config type missing here is refused before anything starts.
var adapterFactories = map[string]adapterFactory{
	config.TypeLocal:    newLocalAdapter,
	config.TypeSlack:    newSlackAdapter,
	config.TypeDiscord:  newDiscordAdapter,
	config.TypeTelegram: newTelegramAdapter,
}

func newLocalAdapter(p config.Platform, deps adapterDeps) (platform.Adapter, error) {
	return local.New(local.Config{
		Name:        p.Name,
		In:          deps.Stdin,
		Out:         deps.Stdout,
		Status:      deps.Stderr,
		User:        deps.User,
		Interactive: deps.Interactive,
		Terminal:    deps.Terminal,
		Stop:        "!stop",
		Width:       deps.Width,
		OnEOF:       deps.OnEOF,
	}, deps.Log)
}

func newSlackAdapter(p config.Platform, deps adapterDeps) (platform.Adapter, error) {
	return slack.New(slack.Config{
		Name:           p.Name,
		BotToken:       p.BotToken.Reveal(),
		AppToken:       p.AppToken.Reveal(),
		APIURL:         p.APIURL,
		EditsPerMinute: p.EditsPerMinute,
		EditBurst:      p.EditBurst,
		EditInterval:   p.EditInterval.D(),
		ReconnectMin:   p.ReconnectMin.D(),
		ReconnectMax:   p.ReconnectMax.D(),
		AckHandledOnly: deps.Cluster,
	}, deps.Log)
}

func newDiscordAdapter(p config.Platform, deps adapterDeps) (platform.Adapter, error) {
	return discord.New(discord.Config{
		Name:             p.Name,
		Token:            p.Token.Reveal(),
		APIURL:           p.APIURL,
		ThreadPerMessage: p.ThreadPerMessage,
	}, deps.Log)
}

func newTelegramAdapter(p config.Platform, deps adapterDeps) (platform.Adapter, error) {
	return telegram.New(telegram.Config{
		Name:   p.Name,
		Token:  p.Token.Reveal(),
		APIURL: p.APIURL,
	}, deps.Log)
}

// checkAvailable refuses platform types the registry has no adapter for,
// naming the config key.
func checkAvailable(cfg *config.Config, factories map[string]adapterFactory) error {
	var errs []error
	for i, p := range cfg.Platforms {
		if _, ok := factories[p.Type]; !ok {
			errs = append(errs, fmt.Errorf("platforms[%d].type: platform type %s is not available in this build", i, p.Type))
		}
	}
	return errors.Join(errs...)
}

// buildAdapters constructs one adapter per [[platforms]] entry. Adapter
// constructors only validate, so this has no side effects either.
func buildAdapters(cfg *config.Config, deps adapterDeps) ([]platform.Adapter, error) {
	var (
		out  []platform.Adapter
		errs []error
	)
	for i, p := range cfg.Platforms {
		factory, ok := adapterFactories[p.Type]
		if !ok {
			errs = append(errs, fmt.Errorf("platforms[%d].type: platform type %s is not available in this build", i, p.Type))
			continue
		}
		a, err := factory(p, deps)
		if err != nil {
			errs = append(errs, fmt.Errorf("platforms[%d] (%s): %w", i, p.Name, err))
			continue
		}
		observe(a, deps.Observer)
		out = append(out, a)
	}
	return out, errors.Join(errs...)
}

// currentUser names the person at the terminal, for the local chat's
// messages (and so for allow_users).
func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}

// observe gives o to an adapter that reports connection errors and
// reconnects; adapters that do not are counted by the engine alone.
func observe(a platform.Adapter, o platform.Observer) {
	if ob, ok := a.(platform.Observed); ok && o != nil {
		ob.SetObserver(o)
	}
}
