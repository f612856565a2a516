// Package workspace owns where a workspace lives on disk and the small state
// files cc-connect keeps. It normalizes paths so that one folder is always
// one key (and so one Claude Code project slug), and writes files
// atomically with private permissions. It knows nothing about chat
// platforms or the agent protocol.
package workspace

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// ExpandHome replaces a leading "~" or "~/" with the user's home directory.
func ExpandHome(path string) (string, error) {
	if path != "~" && !strings.HasPrefix(path, "~/") {
		return path, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("expanding %q: %w", path, err)
	}
	return filepath.Join(home, strings.TrimPrefix(path, "~")), nil
}

// Normalize turns a workspace path into the one key that names its folder:
// "~" expanded, made absolute, cleaned, and symlinks resolved. Claude Code
// resolves symlinks too when it names a project, so this keeps cc-connect's
// key and the CLI's transcript folder in step. When the path does not exist
// (yet), the cleaned absolute path is kept. The logger may be nil.
func Normalize(path string, log *slog.Logger) string {
	expanded, err := ExpandHome(path)
	if err != nil {
		expanded = path
	}
	abs, err := filepath.Abs(expanded)
	if err != nil {
		abs = expanded
	}
	result := filepath.Clean(abs)
	if real, err := filepath.EvalSymlinks(result); err == nil {
		result = real
	}
	if result != path && log != nil {
		log.Debug("workspace path normalized", "original", path, "normalized", result)
	}
	return result
}
