package config

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestAuditSection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		err        string // "" = loads
		check      func(t *testing.T, a Audit, dir string)
	}{
		{name: "defaults", text: "", check: func(t *testing.T, a Audit, dir string) {
			if !a.Enabled || a.MaxSize != 10<<20 || a.Keep != 5 || !strings.HasSuffix(a.Path, filepath.Join("audit", "audit.jsonl")) {
				t.Errorf("defaults %+v", a)
			}
		}},
		{name: "relative path", text: "[audit]\npath = \"trail/a.jsonl\"\nmax_size = \"64KiB\"\nkeep = 0\nenabled = false\n",
			check: func(t *testing.T, a Audit, dir string) {
				if a.Enabled || a.Path != filepath.Join(dir, "trail", "a.jsonl") || a.MaxSize != 64<<10 || a.Keep != 0 {
					t.Errorf("got %+v", a)
				}
			}},
		{name: "unknown key", text: "[audit]\nsize = 1\n", err: "audit.size"},
		{name: "small max_size", text: "[audit]\nmax_size = 100\n", err: "audit.max_size"},
		{name: "negative keep", text: "[audit]\nkeep = -1\n", err: "audit.keep"},
		{name: "keep not a number", text: "[audit]\nkeep = \"five\"\n", err: "audit.keep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, minimal+tc.text)
			cfg, err := load(path, envMap(nil))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("load = %v, want an error naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, cfg.Audit, filepath.Dir(path))
		})
	}
}
