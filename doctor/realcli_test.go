package doctor

import (
	"context"
	"testing"

	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// TestClaudeCheckRealCLI: the version check parses what the real CLI
// prints, and the pinned CLI passes it.
func TestClaudeCheckRealCLI(t *testing.T) {
	t.Parallel()
	bin := testenv.ClaudeBinary(t)
	cfg := config.Default()
	cfg.Agent.Command = bin
	c := checkClaude(context.Background(), &cfg, Options{}.withDefaults())
	wantCheck(t, c, OK, testenv.ClaudeVersion+" at "+bin)
}
