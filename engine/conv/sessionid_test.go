package conv

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/procs"
)

// TestDiskTranscriptsFlagNamesThatAreNotUUIDs: the transcripts lister
// marks a file whose name is not a session id.
func TestDiskTranscriptsFlagNamesThatAreNotUUIDs(t *testing.T) {
	configDir, ws := t.TempDir(), t.TempDir()
	dir := agentproc.ProjectDir(configDir, ws)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"--dangerously-skip-permissions", old1} {
		line := `{"type":"user","message":{"role":"user","content":"hi"},"sessionId":"` + name + `"}` + "\n"
		if err := os.WriteFile(filepath.Join(dir, name+".jsonl"), []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	all, err := procs.NewDiskTranscripts(agentproc.Config{Env: map[string]string{"CLAUDE_CONFIG_DIR": configDir}}).List(ws)
	if err != nil || len(all) != 2 {
		t.Fatalf("List = %+v, %v", all, err)
	}
	list, bad := resumable(all)
	if bad != 1 || len(list) != 1 || list[0].SessionID != old1 {
		t.Errorf("resumable = %+v (%d left out), want only %s", list, bad, old1)
	}
}

const old1 = "11111111-1111-4111-8111-111111111111"
