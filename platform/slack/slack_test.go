package slack

import (
	"errors"
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
	if c.APIURL != DefaultAPIURL || c.EditsPerMinute != 50 || c.EditBurst != 3 || c.EditInterval != time.Second ||
		c.ReconnectMin != time.Second || c.ReconnectMax != 2*time.Minute {
		t.Errorf("defaults = %+v", c)
	}
}
