package config

import "path/filepath"

// Audit is [audit]: the audit trail (docs/audit.md), a file of who asked
// what, which tools ran, who approved, and what changed.
type Audit struct {
	// Enabled writes the trail; on by default.
	Enabled bool `toml:"enabled"`
	// Path is the trail's file; "" = <state.dir>/audit/audit.jsonl. Its
	// folder is created 0700, or must be private already.
	Path string `toml:"path"`
	// MaxSize is the size past which the file is rotated.
	MaxSize Size `toml:"max_size"`
	// Keep is how many rotated files are kept (path.1 … path.N).
	Keep int `toml:"keep"`
}

// defaultAudit is [audit] when the file leaves it out.
func defaultAudit() Audit { return Audit{Enabled: true, MaxSize: 10 << 20, Keep: 5} }

// validateAudit checks [audit] and resolves its path (after state.dir).
func validateAudit(c *Config, dir string, d *decoder) {
	a := &c.Audit
	if !d.failed["audit.max_size"] && a.MaxSize < 4<<10 {
		d.failf("audit.max_size", "must be at least 4KiB (a few events), got %s", a.MaxSize)
	}
	if !d.failed["audit.keep"] && (a.Keep < 0 || a.Keep > 1000) {
		d.failf("audit.keep", "must be between 0 and 1000 rotated files, got %d", a.Keep)
	}
	if d.failed["audit.path"] {
		return
	}
	if a.Path == "" {
		if !d.failed["state.dir"] {
			a.Path = filepath.Join(c.State.Dir, "audit", "audit.jsonl")
		}
		return
	}
	p, err := resolvePath(a.Path, dir)
	if err != nil {
		d.failf("audit.path", "%v", err)
		return
	}
	a.Path = p
}
