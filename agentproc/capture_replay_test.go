package agentproc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestReplayCaptures runs agentproc's line decoder over the real-CLI
// captures of testdata/captures/<name>/stdout.jsonl (recorded by the
// capture tier, capture_*_test.go): every line decodes, every can_use_tool
// becomes a PermissionRequest with its tool name, and every result a Result.
// The captures hold lines agentproc does not surface yet (stream_event,
// mcp_message, task_started); they must pass through without harm.
func TestReplayCaptures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "captures", "*", "stdout.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no captures: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(filepath.Dir(file)), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var dec decoder
			var wantPerms, gotPerms []string
			var wantResults, gotResults int
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(nil, 16<<20)
			for n := 1; sc.Scan(); n++ {
				line := sc.Bytes()
				var head struct {
					Type    string `json:"type"`
					Request struct {
						Subtype  string `json:"subtype"`
						ToolName string `json:"tool_name"`
					} `json:"request"`
				}
				if err := json.Unmarshal(line, &head); err != nil {
					t.Fatalf("line %d is not JSON: %v", n, err)
				}
				if head.Type == "control_request" && head.Request.Subtype == "can_use_tool" {
					wantPerms = append(wantPerms, head.Request.ToolName)
				}
				if head.Type == "result" {
					wantResults++
				}
				for _, ev := range dec.decodeLine(line).events {
					switch ev := ev.(type) {
					case Malformed:
						t.Errorf("line %d decoded as Malformed: %v", n, ev.Err)
					case PermissionRequest:
						gotPerms = append(gotPerms, ev.ToolName)
					case *Result:
						gotResults++
					}
				}
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			if len(gotPerms) != len(wantPerms) || gotResults != wantResults {
				t.Errorf("decoded %v permission requests and %d results, want %v and %d", gotPerms, gotResults, wantPerms, wantResults)
			}
			for i := range gotPerms {
				if i < len(wantPerms) && gotPerms[i] != wantPerms[i] {
					t.Errorf("permission request %d for %s, want %s", i, gotPerms[i], wantPerms[i])
				}
			}
		})
	}
}
