package agentproc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTranscriptPathMatchesTheFake: the fake claude computes where it
// writes transcripts from its own copy of the CLI's rule (config dir, slug),
// so a wrong rule here fails this test instead of agreeing with itself. The
// real CLI is held to the same cases in TestRealCLITranscriptPath.
func TestTranscriptPathMatchesTheFake(t *testing.T) {
	tests := []struct {
		name    string
		dir     string
		symlink bool // start the fake through a symlink to dir
		emptyCD bool // CLAUDE_CONFIG_DIR="" in the agent's env
	}{
		{"punctuation", "My Proj@v2+x~y#z", false, false},
		{"non-ascii", "ünï_cødé emoji😀x", false, false},
		{"over 200 chars", strings.Repeat("L", 230), false, false},
		{"through a symlink", "real_target", true, false},
		{"empty CLAUDE_CONFIG_DIR", "proj", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newFakeEnv(t)
			dir := filepath.Join(filepath.Dir(e.dir), tt.dir)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			cwd := dir
			if tt.symlink {
				cwd = filepath.Join(filepath.Dir(e.dir), "link_to_real")
				if err := os.Symlink(dir, cwd); err != nil {
					t.Fatal(err)
				}
			}
			if tt.emptyCD {
				e.env["CLAUDE_CONFIG_DIR"] = ""
			}
			p := e.start(StartOptions{Dir: cwd})
			res, err := runTurn(testCtx(t), p, "where", nil)
			if err != nil {
				t.Fatal(err)
			}
			want := TranscriptPath(ConfigDir(e.env), cwd, res.SessionID)
			if _, err := os.Stat(want); err != nil {
				var found []string
				_ = filepath.WalkDir(filepath.Dir(filepath.Dir(e.dir)), func(path string, _ os.DirEntry, _ error) error {
					if strings.HasSuffix(path, res.SessionID+".jsonl") {
						found = append(found, path)
					}
					return nil
				})
				t.Errorf("transcript not at %s (%v); the fake wrote %q", want, err, found)
			}
		})
	}
}
