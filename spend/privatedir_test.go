package spend

import (
	"os"
	"path/filepath"
	"testing"
)

// privateDir is a folder closed to other users, as cc-connect's state dir
// is: the atomic writes refuse a folder others can read (t.TempDir makes
// 0755 ones).
func privateDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}
