package agentproc_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
)

// The capture tier for file checkpointing: the CLI checkpoints the files a
// turn writes only when CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING is set
// (what the Agent SDK's enableFileCheckpointing sets); rewind_files to the
// uuid of the turn's user message then reports (dry_run) or undoes what the
// turn changed, and get_workspace_diff reports the git working tree against
// HEAD, not the turn.

const checkpointFirst = "11111111-2222-4333-8444-555555555555"

// checkpointCapture starts the CLI in a git workspace holding one committed
// file and runs one turn that writes new.txt (three lines).
func checkpointCapture(t *testing.T, on bool) *capture {
	t.Helper()
	env := map[string]string{"IS_SANDBOX": "1"}
	if on {
		env["CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING"] = "true"
	}
	api := fakeapi.Start(t)
	c := startCapture(t, api, captureOpts{args: []string{"--permission-mode", "bypassPermissions"}, env: env})
	if err := os.WriteFile(filepath.Join(c.dir, "keep.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, a := range [][]string{{"init", "-q"}, {"add", "."},
		{"-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "start"}} {
		cmd := exec.Command("git", a...)
		cmd.Dir = c.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", a, err, out)
		}
	}
	c.send(map[string]any{"type": "user", "uuid": checkpointFirst,
		"message": map[string]any{"role": "user", "content": "[[WRITE:new.txt:a\nb\nc]]"}})
	if res := c.result(); res["is_error"] != false {
		t.Fatalf("the writing turn's result %v", res)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "new.txt")); err != nil {
		t.Fatalf("the turn did not write new.txt: %v", err)
	}
	return c
}

// reply sends one control request and waits for its answer.
func (c *capture) reply(id string, req map[string]any) map[string]any {
	c.t.Helper()
	c.control(id, req)
	return c.next("the answer to "+id, func(m map[string]any) bool {
		return m["type"] == "control_response" && str(m, "response", "request_id") == id
	})
}

// TestRealCLICaptureCheckpoints: with checkpointing on, a dry rewind to the
// turn's user message lists the file and counts the lines rewinding removes
// (deletions 3 for the three written); the rewind deletes the new file; a
// second rewind to the same message succeeds again and changes nothing.
// get_workspace_diff lists the untracked file with no line counts.
func TestRealCLICaptureCheckpoints(t *testing.T) {
	t.Parallel()
	c := checkpointCapture(t, true)
	diff := c.reply("ccc_1_get_workspace_diff", map[string]any{"subtype": "get_workspace_diff"})
	if str(diff, "response", "subtype") != "success" || str(diff, "response", "response", "diff", "source", "kind") != "working-tree" {
		t.Errorf("get_workspace_diff %v, want the working tree's diff", diff)
	}
	files, _ := dig(diff, "response", "response", "diff", "perFileStats").([]any)
	if len(files) != 1 || str(files[0].(map[string]any), "path") != "new.txt" || files[0].(map[string]any)["isUntracked"] != true {
		t.Errorf("get_workspace_diff files %v, want new.txt untracked", files)
	}
	dry := c.reply("ccc_2_rewind_files", map[string]any{"subtype": "rewind_files", "user_message_id": checkpointFirst, "dry_run": true})
	res, _ := dig(dry, "response", "response").(map[string]any)
	changed, _ := res["filesChanged"].([]any)
	if res["canRewind"] != true || len(changed) != 1 || changed[0] != filepath.Join(c.dir, "new.txt") ||
		res["deletions"] != float64(3) || res["insertions"] != float64(0) {
		t.Errorf("dry rewind %v, want new.txt with 3 deletions", res)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "new.txt")); err != nil {
		t.Errorf("a dry rewind touched new.txt: %v", err)
	}
	done := c.reply("ccc_3_rewind_files", map[string]any{"subtype": "rewind_files", "user_message_id": checkpointFirst})
	if str(done, "response", "subtype") != "success" || dig(done, "response", "response", "canRewind") != true {
		t.Errorf("rewind %v, want success", done)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "new.txt")); !os.IsNotExist(err) {
		t.Errorf("new.txt after the rewind: %v, want it gone", err)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "keep.txt")); err != nil {
		t.Errorf("keep.txt after the rewind: %v", err)
	}
	again := c.reply("ccc_4_rewind_files", map[string]any{"subtype": "rewind_files", "user_message_id": checkpointFirst})
	if str(again, "response", "subtype") != "success" {
		t.Errorf("second rewind %v, want success again", again)
	}
	c.finish()
	c.save("checkpoints", "Env CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING=true, a git workspace with keep.txt\n"+
		"committed, --permission-mode bypassPermissions (IS_SANDBOX=1). Fake API marker `[[WRITE:new.txt:a\\nb\\nc]]`,\n"+
		"then get_workspace_diff, rewind_files dry_run, rewind_files, rewind_files again (user message uuid "+checkpointFirst+").")
}

// TestRealCLICaptureCheckpointsOff: without the variable a dry rewind
// answers success with canRewind false and the reason, a real one answers
// an error, and the file stays.
func TestRealCLICaptureCheckpointsOff(t *testing.T) {
	t.Parallel()
	c := checkpointCapture(t, false)
	dry := c.reply("ccc_1_rewind_files", map[string]any{"subtype": "rewind_files", "user_message_id": checkpointFirst, "dry_run": true})
	if dig(dry, "response", "response", "canRewind") != false || str(dry, "response", "response", "error") != "File rewinding is not enabled." {
		t.Errorf("dry rewind %v, want canRewind false with the reason", dry)
	}
	done := c.reply("ccc_2_rewind_files", map[string]any{"subtype": "rewind_files", "user_message_id": checkpointFirst})
	if str(done, "response", "subtype") != "error" || str(done, "response", "error") != "File rewinding is not enabled." {
		t.Errorf("rewind %v, want an error", done)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "new.txt")); err != nil {
		t.Errorf("new.txt after a refused rewind: %v", err)
	}
	c.finish()
	c.save("checkpoints_off", "No checkpointing variable; otherwise as checkpoints: rewind_files dry_run, then rewind_files.")
}
