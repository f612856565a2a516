package agentproc_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The capture tier for what a turn changed, as cc-connect shows and undoes
// it: the tool_use_result of the file tools (the turn's own patches), a dry
// rewind per turn (only that turn's files, since later turns' changes are
// in it too), and a rewind after the CLI was started again with --resume
// (checkpoints outlive the process).

const (
	checkpointSecond = "22222222-2222-4333-8444-555555555555"
	checkpointThird  = "33333333-2222-4333-8444-555555555555"
	checkpointBash   = "44444444-2222-4333-8444-555555555555"
)

// TestRealCLICaptureCheckpointTurns: a turn that edits a committed file and
// creates another; the Edit's tool_use_result carries a structuredPatch and
// the Write's its content with type create; a dry rewind to that turn lists
// both files. A second turn writes a third file; a dry rewind to the second
// turn lists only that file. After the CLI exits and is started again with
// --resume, a dry rewind to the second turn still lists it and the rewind
// deletes the file. A turn that changed a file through Bash only, and a
// turn that changed nothing, both answer canRewind with no files: the CLI
// checkpoints what its file tools change.
func TestRealCLICaptureCheckpointTurns(t *testing.T) {
	t.Parallel()
	c := checkpointCapture(t, true) // turn 1 (checkpointFirst) wrote new.txt
	keep := filepath.Join(c.dir, "keep.txt")
	c.send(map[string]any{"type": "user", "uuid": checkpointSecond,
		"message": map[string]any{"role": "user", "content": "[[READ:keep.txt]][[CALL:Edit " +
			fmt.Sprintf(`{"file_path":%q,"old_string":"two","new_string":"TWO\nthree"}`, keep) + "]][[WRITE:other.txt:x\ny]]"}})
	res := c.result()
	if res["is_error"] != false {
		t.Fatalf("the second turn's result %v", res)
	}
	if b, _ := os.ReadFile(keep); string(b) != "one\nTWO\nthree\n" {
		t.Fatalf("keep.txt after the edit %q", b)
	}
	var edit, write map[string]any
	for _, m := range c.lines() {
		r, _ := m["tool_use_result"].(map[string]any)
		switch {
		case r == nil:
		case r["filePath"] == keep && r["structuredPatch"] != nil:
			edit = r
		case r["filePath"] == filepath.Join(c.dir, "other.txt"):
			write = r
		}
	}
	if hunks, _ := edit["structuredPatch"].([]any); len(hunks) != 1 {
		t.Errorf("the Edit's tool_use_result %v, want one hunk in structuredPatch", edit)
	} else if h := hunks[0].(map[string]any); !slices.Equal(toStrings(h["lines"]), []string{" one", "-two", "+TWO", "+three"}) {
		t.Errorf("the Edit's hunk %v", h)
	}
	if write["type"] != "create" || write["content"] != "x\ny" {
		t.Errorf("the Write's tool_use_result %v, want create with its content", write)
	}
	dry := c.reply("ccc_1_rewind_files", map[string]any{"subtype": "rewind_files", "user_message_id": checkpointSecond, "dry_run": true})
	got, _ := dig(dry, "response", "response").(map[string]any)
	files := toStrings(got["filesChanged"])
	slices.Sort(files)
	if !slices.Equal(files, []string{keep, filepath.Join(c.dir, "other.txt")}) {
		t.Errorf("dry rewind to the second turn %v, want keep.txt and other.txt only", got)
	}
	t.Logf("dry rewind to the second turn: %v", got)
	sid := str(res, "session_id")
	c.finish()
	c.save("checkpoint_turns", "Env CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING=true, a git workspace with keep.txt (\"one\\ntwo\\n\")\n"+
		"committed. Turn 1 (uuid "+checkpointFirst+") `[[WRITE:new.txt:a\\nb\\nc]]`; turn 2 (uuid "+checkpointSecond+")\n"+
		"`[[READ:keep.txt]][[CALL:Edit {file_path, old_string two, new_string TWO\\nthree}]][[WRITE:other.txt:x\\ny]]`,\n"+
		"then rewind_files dry_run to turn 2.")

	r := startCapture(t, c.api, captureOpts{dir: c.dir, home: c.home,
		args: []string{"--permission-mode", "bypassPermissions", "--resume", sid},
		env:  map[string]string{"IS_SANDBOX": "1", "CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING": "true"}})
	dry2 := r.reply("ccc_1_rewind_files", map[string]any{"subtype": "rewind_files", "user_message_id": checkpointSecond, "dry_run": true})
	t.Logf("dry rewind after --resume: %v", dry2)
	done := r.reply("ccc_2_rewind_files", map[string]any{"subtype": "rewind_files", "user_message_id": checkpointSecond})
	t.Logf("rewind after --resume: %v", done)
	if str(done, "response", "subtype") != "success" {
		t.Errorf("rewind after --resume %v, want success", done)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "other.txt")); !os.IsNotExist(err) {
		t.Errorf("other.txt after the rewind: %v, want it gone", err)
	}
	if b, _ := os.ReadFile(keep); string(b) != "one\ntwo\n" {
		t.Errorf("keep.txt after the rewind %q, want it as committed", b)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "new.txt")); err != nil {
		t.Errorf("new.txt (the first turn's) after rewinding the second: %v", err)
	}
	// A turn that changes a file through Bash only.
	r.send(map[string]any{"type": "user", "uuid": checkpointBash,
		"message": map[string]any{"role": "user", "content": "[[TOOL:echo x > bash.txt]]"}})
	if res := r.result(); res["is_error"] != false {
		t.Fatalf("the Bash turn's result %v", res)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "bash.txt")); err != nil {
		t.Fatalf("the Bash turn did not write bash.txt: %v", err)
	}
	bash := r.reply("ccc_bash_rewind_files", map[string]any{"subtype": "rewind_files", "user_message_id": checkpointBash, "dry_run": true})
	if got, _ := dig(bash, "response", "response").(map[string]any); got["canRewind"] != true || len(toStrings(got["filesChanged"])) != 0 {
		t.Errorf("dry rewind to a Bash-only turn %v, want no files: the CLI checkpoints its file tools only", bash)
	}
	// A turn that changes no files.
	r.send(map[string]any{"type": "user", "uuid": checkpointThird,
		"message": map[string]any{"role": "user", "content": "just talk"}})
	if res := r.result(); res["is_error"] != false {
		t.Fatalf("the third turn's result %v", res)
	}
	none := r.reply("ccc_3_rewind_files", map[string]any{"subtype": "rewind_files", "user_message_id": checkpointThird, "dry_run": true})
	if got, _ := dig(none, "response", "response").(map[string]any); got["canRewind"] != true || len(toStrings(got["filesChanged"])) != 0 ||
		got["insertions"] != float64(0) || got["deletions"] != float64(0) {
		t.Errorf("dry rewind to a turn without changes %v, want canRewind with no files", none)
	}
	r.finish()
	r.save("checkpoint_resume", "As checkpoint_turns, then the CLI started again with --resume <session>: rewind_files\n"+
		"dry_run to turn 2 ("+checkpointSecond+"), then rewind_files; then a turn `[[TOOL:echo x > bash.txt]]` (uuid\n"+
		checkpointBash+") and a turn without changes (uuid "+checkpointThird+"), each with rewind_files dry_run to it.")
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}
