package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/viper"
)

// Load reads, expands, defaults and validates the config file at path. On
// failure the error lists every problem found, each naming its key; a
// missing file wraps ErrNotFound.
func Load(path string) (*Config, error) {
	return load(path, os.LookupEnv)
}

func load(path string, lookup func(string) (string, bool)) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("loading config %s: %w", path, err)
	}
	data, err := os.ReadFile(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, abs)
	}
	if err != nil {
		return nil, fmt.Errorf("loading config: %w", err)
	}

	// The raw tree keeps the keys' case: viper lowercases them. It is the
	// source for unknown-key checks (so an empty misspelt table, which
	// viper drops, is still reported) and for the agent environment.
	var raw map[string]any
	if err := toml.Unmarshal(data, &raw); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, fmt.Errorf("parsing config %s:%d:%d: %s", abs, row, col, de.Error())
		}
		return nil, fmt.Errorf("parsing config %s: %w", abs, err)
	}

	// A delimiter that cannot appear in our keys, so viper never splits a
	// quoted key containing a dot.
	v := viper.NewWithOptions(viper.KeyDelimiter("::"))
	v.SetConfigType("toml")
	if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
		return nil, fmt.Errorf("parsing config %s: %w", abs, err)
	}
	settings := v.AllSettings()
	if agent, ok := settings["agent"].(map[string]any); ok {
		delete(agent, "env") // decoded from the raw tree below
	}
	if bindings, ok := settings["bindings"].([]any); ok {
		for _, item := range bindings {
			if b, ok := item.(map[string]any); ok {
				delete(b, "env") // decoded from the raw tree below
			}
		}
	}

	cfg := Default()
	cfg.Path = abs
	d := &decoder{lookup: lookup}
	d.checkKeys("", raw, reflect.TypeFor[Config]())
	d.decodeStruct("", settings, reflect.ValueOf(&cfg).Elem())
	if _, ok := raw["cluster"]; ok && cfg.Cluster == nil {
		// An empty [cluster] table, which viper drops: still a cluster,
		// to be reported as one without a host.
		cl := defaultCluster()
		cfg.Cluster = &cl
	}
	if agent, ok := raw["agent"].(map[string]any); ok {
		if env, ok := agent["env"]; ok {
			d.decodeValue("agent.env", env, reflect.ValueOf(&cfg.Agent.Env).Elem())
		}
	}

	decodeBindingEnv(raw, &cfg, d)

	cfg.Warnings = validate(&cfg, filepath.Dir(abs), d)
	cfg.Warnings = append(cfg.Warnings, validateSecrets(&cfg, raw, d)...)
	if info, err := os.Stat(abs); err == nil && info.Mode().Perm()&0o077 != 0 {
		for _, key := range cfg.LiteralSecrets {
			cfg.Warnings = append(cfg.Warnings, fmt.Sprintf(
				"%s is written in %s, which others can read (mode %04o): use ${VAR} or chmod 600", key, abs, info.Mode().Perm()))
		}
	}
	if len(d.errs) > 0 {
		return nil, fmt.Errorf("invalid config %s:\n%w", abs, errors.Join(d.errs...))
	}
	return &cfg, nil
}

// literalSecrets lists the keys whose secret is written in the file
// itself rather than taken from the environment: platform tokens and
// webhook secrets.
func literalSecrets(raw map[string]any) []string {
	var keys []string
	literal := func(v any) bool {
		s, ok := v.(string)
		return ok && s != "" && !strings.Contains(s, "${")
	}
	platforms, _ := raw["platforms"].([]any)
	for i, item := range platforms {
		p, _ := item.(map[string]any)
		for _, k := range tokenKeys {
			if literal(p[k]) {
				keys = append(keys, fmt.Sprintf("platforms[%d].%s", i, k))
			}
		}
	}
	for i, h := range rawHooks(raw) {
		if literal(h["secret"]) {
			keys = append(keys, fmt.Sprintf("webhooks.hooks[%d].secret", i))
		}
	}
	return keys
}
