package config

import (
	"go/build"
	"slices"
	"testing"
)

// TestImportsNoAgentproc keeps this package apart from the agent driver:
// it describes or computes, and its caller speaks agentproc.
func TestImportsNoAgentproc(t *testing.T) {
	p, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(p.Imports, "github.com/cc-connect/cc-connect/agentproc") {
		t.Errorf("%s imports agentproc: %v", p.ImportPath, p.Imports)
	}
}
