package slack

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/platform"
)

func TestNewValidatesConfig(t *testing.T) {
	good := Config{Name: "s", BotToken: "xoxb-1", AppToken: "xapp-1"}
	tests := []struct {
		name    string
		edit    func(*Config)
		wantErr string // "" = valid
	}{
		{"minimal", func(*Config) {}, ""},
		{"custom api url without slash", func(c *Config) { c.APIURL = "https://slack-gov.com/api" }, ""},
		{"no name", func(c *Config) { c.Name = " " }, "name is empty"},
		{"no bot token", func(c *Config) { c.BotToken = " " }, "bot_token"},
		{"no app token", func(c *Config) { c.AppToken = "" }, "app_token"},
		{"api url not http", func(c *Config) { c.APIURL = "ftp://x" }, "api_url"},
		{"api url garbage", func(c *Config) { c.APIURL = "::" }, "api_url"},
		{"negative edit rate", func(c *Config) { c.EditsPerMinute = -1 }, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.edit(&cfg)
			a, err := New(cfg, nil)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if !strings.HasSuffix(a.cfg.APIURL, "/") || a.Name() != "s" || a.Status().State != platform.NotStarted {
					t.Errorf("cfg %+v, status %v", a.cfg, a.Status())
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New = %v, want ErrInvalidConfig mentioning %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "xoxb-1") || strings.Contains(err.Error(), "xapp-1") || strings.Contains(err.Error(), "xoxp-1") {
				t.Errorf("error carries a token: %v", err)
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	a, err := New(Config{Name: "s", BotToken: "xoxb-1", AppToken: "xapp-1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := a.cfg
	if c.APIURL != DefaultAPIURL || c.EditsPerMinute != DefaultEditRate.PerMinute || c.EditBurst != DefaultEditRate.Burst || c.EditInterval != DefaultEditRate.Interval ||
		c.ReconnectMin != time.Second || c.ReconnectMax != 2*time.Minute {
		t.Errorf("defaults = %+v", c)
	}
}

// TestExampleShowsTheEditDefaults holds config.example.toml's Slack edit
// settings, their example values and their "(0: …)" defaults, to
// DefaultEditRate, the one place the defaults are written.
func TestExampleShowsTheEditDefaults(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "config.example.toml"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"edits_per_minute": strconv.Itoa(DefaultEditRate.PerMinute),
		"edit_burst":       strconv.Itoa(DefaultEditRate.Burst),
		"edit_interval":    DefaultEditRate.Interval.String(),
	}
	line := regexp.MustCompile(`(?m)^#\s*(\w+)\s*=\s*"?([^"\s]+)"?\s*#.*\(0: ([^)]+)\)`)
	seen := 0
	for _, m := range line.FindAllStringSubmatch(string(b), -1) {
		w, ok := want[m[1]]
		if !ok {
			continue
		}
		seen++
		if m[2] != w || m[3] != w {
			t.Errorf("config.example.toml shows %s = %s (0: %s), want %s", m[1], m[2], m[3], w)
		}
	}
	if seen != len(want) {
		t.Errorf("config.example.toml shows %d of the %d edit settings", seen, len(want))
	}
}
