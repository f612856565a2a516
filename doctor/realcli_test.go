package doctor

import (
	"context"
	"testing"

	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// TestRealCLIClaudeCheck: the version check parses what the real CLI
// prints; the pinned CLI passes it, another release gets the warning.
func TestRealCLIClaudeCheck(t *testing.T) {
	t.Parallel()
	bin := testenv.ClaudeBinary(t)
	cfg := config.Default()
	cfg.Agent.Command = bin
	c := checkClaude(context.Background(), &cfg, Options{}.withDefaults())
	if v := testenv.WantVersion(); v != testenv.ClaudeVersion {
		wantCheck(t, c, Warn, v+" at "+bin+"; cc-connect is tested with "+testenv.ClaudeVersion)
		return
	}
	wantCheck(t, c, OK, testenv.ClaudeVersion+" at "+bin)
}
