package config

import (
	"strings"
	"testing"
)

func TestMetricsConfig(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		section  string
		wantAddr string
		wantErr  string // "" = loads
	}{
		{"off by default", "", "", ""},
		{"loopback v4", "[metrics]\naddr = \"127.0.0.1:9464\"\n", "127.0.0.1:9464", ""},
		{"loopback v6", "[metrics]\naddr = \"[::1]:9464\"\n", "[::1]:9464", ""},
		{"localhost", "[metrics]\naddr = \"localhost:9464\"\n", "localhost:9464", ""},
		{"all interfaces refused", "[metrics]\naddr = \"0.0.0.0:9464\"\n", "", `metrics.addr: "0.0.0.0:9464" can be reached from other hosts`},
		{"empty host refused", "[metrics]\naddr = \":9464\"\n", "", `metrics.addr: ":9464" can be reached from other hosts`},
		{"host name refused", "[metrics]\naddr = \"mon.example:9464\"\n", "", `metrics.addr: "mon.example:9464" can be reached from other hosts`},
		{"remote allowed", "[metrics]\naddr = \"0.0.0.0:9464\"\nallow_remote = true\n", "0.0.0.0:9464", ""},
		{"no port", "[metrics]\naddr = \"127.0.0.1\"\n", "", `metrics.addr: "127.0.0.1" is not host:port`},
		{"typo", "[metrics]\nadr = \"127.0.0.1:9464\"\n", "", "metrics.adr: unknown key (did you mean metrics.addr?)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := load(writeConfig(t, minimal+tt.section), envMap(nil))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Metrics.Addr != tt.wantAddr {
				t.Errorf("metrics.addr = %q, want %q", cfg.Metrics.Addr, tt.wantAddr)
			}
			if tt.wantAddr != "" && !strings.Contains(cfg.String(), "[metrics]\naddr = \""+tt.wantAddr+"\"") {
				t.Errorf("String() lacks the metrics section:\n%s", cfg)
			}
		})
	}
}
