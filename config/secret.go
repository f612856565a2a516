package config

import "log/slog"

// Redacted is what a set secret looks like in logs and printed configs.
const Redacted = "[redacted]"

// Secret is a string that must never reach a log: tokens and agent
// environment values. fmt, slog and encoding/json all see Redacted; only
// Reveal returns the value, at the one place that hands it to a client
// library.
type Secret string

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return string(s) }

// String shows whether the secret is set without showing it.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return Redacted
}

// GoString keeps %#v from printing the value.
func (s Secret) GoString() string { return `"` + s.String() + `"` }

// LogValue keeps slog from printing the value.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText keeps encoding/json and friends from printing the value.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

var (
	_ slog.LogValuer = Secret("")
)
