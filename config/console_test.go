package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConsoleValidation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cert := filepath.Join(dir, "cert.pem")
	key := filepath.Join(dir, "key.pem")
	for _, f := range []string{cert, key} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, toml, wantErr string
	}{
		{"off by default", ``, ""},
		{"loopback", "[console]\nenabled = true\n", ""},
		{"remote without tls", "[console]\nenabled = true\nlisten = \"0.0.0.0:8474\"\n", "console.listen: \"0.0.0.0:8474\" can be reached from other hosts"},
		{"remote with tls", "[console]\nenabled = true\nlisten = \"0.0.0.0:8474\"\ntls_cert = \"" + cert + "\"\ntls_key = \"" + key + "\"\n", ""},
		{"cert without key", "[console]\nenabled = true\ntls_cert = \"" + cert + "\"\n", "console.tls_cert: tls_cert and tls_key go together"},
		{"missing cert file", "[console]\nenabled = true\ntls_cert = \"" + dir + "/nope\"\ntls_key = \"" + key + "\"\n", "console.tls_cert:"},
		{"proxy without addresses", "[console]\nenabled = true\nlisten = \"0.0.0.0:8474\"\nbehind_proxy = true\nurl = \"https://cc.example.com\"\n", "console.trusted_proxies: behind_proxy = true needs"},
		{"proxy without url", "[console]\nenabled = true\nlisten = \"0.0.0.0:8474\"\nbehind_proxy = true\ntrusted_proxies = [\"10.0.0.1\"]\n", "console.url: behind_proxy = true needs"},
		{"proxy", "[console]\nenabled = true\nlisten = \"0.0.0.0:8474\"\nbehind_proxy = true\ntrusted_proxies = [\"10.0.0.0/8\", \"::1\"]\nurl = \"https://cc.example.com\"\n", ""},
		{"bad proxy", "[console]\nenabled = true\nbehind_proxy = true\ntrusted_proxies = [\"nope\"]\nurl = \"https://cc.example.com\"\n", "console.trusted_proxies[0]: \"nope\" is not an IP address or a CIDR"},
		{"http url behind proxy", "[console]\nenabled = true\nbehind_proxy = true\ntrusted_proxies = [\"127.0.0.1\"]\nurl = \"http://cc.example.com\"\n", "console.url: \"http://cc.example.com\" must be https"},
		{"not host port", "[console]\nenabled = true\nlisten = \"8474\"\n", "console.listen: \"8474\" is not host:port"},
		{"ttl zero", "[console]\nenabled = true\nsession_ttl = \"0s\"\n", "console.session_ttl: must be between"},
		{"ttl too long", "[console]\nenabled = true\nsession_ttl = \"720h\"\n", "console.session_ttl: must be between"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := load(writeConfig(t, minimal+tt.toml), envMap(nil))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestConsoleDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := load(writeConfig(t, minimal+"[console]\nenabled = true\n"), envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Console.BaseURL(); got != "http://"+DefaultConsoleListen {
		t.Errorf("BaseURL = %q", got)
	}
	if cfg.Console.SessionTTL.D().Hours() != 12 {
		t.Errorf("session_ttl = %s, want 12h", cfg.Console.SessionTTL)
	}
	if !strings.Contains(cfg.String(), "[console]") {
		t.Errorf("String() leaves [console] out:\n%s", cfg)
	}
}
