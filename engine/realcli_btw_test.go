package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/render"
)

// A side question cannot change the workspace, whatever the config says:
// the fake Messages API asks the fork to write a file with the Write tool
// and with Bash, and the real CLI must leave both files unwritten. The main
// session writes under the same config (the control that the config really
// lets writes through unasked).
func TestRealCLIBtwCannotWrite(t *testing.T) {
	tests := []struct {
		name  string
		agent func(c *agentproc.Config)
	}{
		{"acceptEdits", func(c *agentproc.Config) { c.PermissionMode = "acceptEdits" }},
		{"bypassPermissions", func(c *agentproc.Config) {
			c.PermissionMode = "bypassPermissions"
			c.Env["IS_SANDBOX"] = "1" // the CLI refuses bypassPermissions to root without it
		}},
		{"agent args that widen the tools", func(c *agentproc.Config) {
			c.Env["IS_SANDBOX"] = "1"
			c.Args = []string{"--tools", "default", "--permission-mode", "bypassPermissions", "--allowedTools", "Write,Bash"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := newRealCLIHarness(t, func(o *Options) { tt.agent(&o.Agent) })
			mainFile := filepath.Join(h.ws, "main_write.txt")
			h.say("alice", "T1", "[[WRITE:"+mainFile+":written by the fake API]]")
			h.rec.waitSend(t, "tool said: ")
			if data, err := os.ReadFile(mainFile); err != nil || !strings.Contains(string(data), "written by the fake API") {
				t.Fatalf("the main session did not write under this config (%v): the test proves nothing", err)
			}
			for _, c := range []struct{ file, prompt string }{
				{"side_write.txt", "[[WRITE:%s:x]]"},
				{"side_bash.txt", "[[TOOL:touch %s]]"},
			} {
				path := filepath.Join(h.ws, c.file)
				before := len(h.rec.sends(render.SidePrefix))
				h.say("alice", "T1", "!btw "+strings.Replace(c.prompt, "%s", path, 1))
				h.rec.waitFor(t, "the side answer", func([]recorded) bool { return len(h.rec.sends(render.SidePrefix)) > before })
				answer := h.rec.sends(render.SidePrefix)[before]
				if _, err := os.Stat(path); err == nil {
					t.Errorf("%s: the side question wrote the file (answer %q)", c.file, answer)
				}
				if !strings.Contains(answer, "No such tool available") {
					t.Errorf("%s: side answer = %q, want the CLI's refusal of the tool", c.file, answer)
				}
			}
			if recs := h.logs.Records("Side-question process could change the workspace; killing it"); len(recs) != 0 {
				t.Errorf("the real CLI started a fork with a writing tool: %v", recs)
			}
		})
	}
}
