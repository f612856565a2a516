package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/google/uuid"
)

// reWrite is [[WRITE:path:text]]: the turn writes text to path (relative to
// the working directory), as the real CLI's Write tool would.
var reWrite = regexp.MustCompile(`\[\[WRITE:([^:\]]+):([^\]]*)\]\]`)

// checkpointEnv switches file checkpointing on, as with the real CLI
// (docs/claude-code.md §10).
const checkpointEnv = "CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING"

// backup is what one file held before a turn first wrote it.
type backup struct {
	path    string // absolute
	before  []byte
	existed bool
}

// turnBackups are one turn's backups, by the uuid of its user message.
type turnBackups struct {
	uuid  string
	files []backup
}

// writeFiles carries out the turn's [[WRITE]] markers, keeping a backup of
// each file first when checkpointing is on, and reports each as the real
// CLI's Write does on stdout (writeEvents). f.mu is not held.
func (f *fake) writeFiles(m userMsg, model string) {
	var tb turnBackups
	for _, mm := range reWrite.FindAllStringSubmatch(m.text, -1) {
		path, err := filepath.Abs(mm[1])
		if err != nil {
			continue
		}
		before, err := os.ReadFile(path)
		tb.files = append(tb.files, backup{path: path, before: before, existed: err == nil})
		_ = os.MkdirAll(filepath.Dir(path), 0o755)
		_ = os.WriteFile(path, []byte(mm[2]), 0o644)
		f.writeEvents(model, path, before, err == nil, mm[2])
	}
	if os.Getenv(checkpointEnv) != "true" {
		return
	}
	// Every turn is a checkpoint, one without writes too: a dry rewind to
	// it answers no files, as the real CLI's does (captures/checkpoint_resume).
	tb.uuid = m.uuid
	f.mu.Lock()
	f.backups = append(f.backups, tb)
	f.mu.Unlock()
}

// rewind answers rewind_files: the files written since the user message
// id go back to what they held before it (deleted when they did not
// exist); a dry run only counts. Like the real CLI, a second rewind to the
// same message succeeds and changes nothing. f.mu is held.
func (f *fake) rewind(id string, dry bool) (map[string]any, string) {
	if os.Getenv(checkpointEnv) != "true" {
		if dry {
			return map[string]any{"canRewind": false, "error": "File rewinding is not enabled."}, ""
		}
		return nil, "File rewinding is not enabled."
	}
	from := -1
	for i, tb := range f.backups {
		if tb.uuid == id {
			from = i
			break
		}
	}
	if from < 0 {
		// The fake's own wording: the real CLI's was not captured.
		return nil, "No file checkpoint found for this message."
	}
	// The oldest backup of each file is what it held before the message.
	oldest := map[string]backup{}
	var order []string
	for _, tb := range f.backups[from:] {
		for _, b := range tb.files {
			if _, seen := oldest[b.path]; !seen {
				oldest[b.path] = b
				order = append(order, b.path)
			}
		}
	}
	if dry {
		var files []string
		ins, del := 0, 0
		for _, p := range order {
			b := oldest[p]
			now, err := os.ReadFile(p)
			if errors.Is(err, fs.ErrNotExist) && !b.existed {
				continue
			}
			files = append(files, p)
			ins += lines(b.before)
			del += lines(now)
		}
		return map[string]any{"canRewind": true, "filesChanged": files, "insertions": ins, "deletions": del}, ""
	}
	for _, p := range order {
		b := oldest[p]
		if b.existed {
			_ = os.WriteFile(p, b.before, 0o644)
		} else {
			_ = os.Remove(p)
		}
	}
	return map[string]any{"canRewind": true, "skippedLinks": 0}, ""
}

// lines counts lines as a diff would: a last line without a newline counts.
func lines(b []byte) int {
	n := strings.Count(string(b), "\n")
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// writeEvents reports one [[WRITE]] on stdout (not in the transcript) as
// the real CLI reports its Write (captures/checkpoint_turns): the
// tool_use, then the tool_result whose tool_use_result is
// {"type":"create","filePath","content","structuredPatch":[],"originalFile":null}
// for a new file, or type "update" with the original and one hunk that
// replaces every line.
func (f *fake) writeEvents(model, path string, before []byte, existed bool, content string) {
	id := "toolu_fakewrite_" + uuid.NewString()[:8]
	f.out.line(map[string]any{"type": "assistant", "message": map[string]any{
		"content": []any{map[string]any{"type": "tool_use", "id": id, "name": "Write",
			"input": map[string]any{"file_path": path, "content": content}}},
		"id": "msg_fakewrite", "model": model, "role": "assistant", "stop_reason": nil, "stop_sequence": nil,
		"type": "message", "usage": usage{}, "context_management": nil},
		"parent_tool_use_id": nil, "session_id": f.sessionID, "uuid": uuid.NewString(), "timestamp": now()})
	result := map[string]any{"type": "create", "filePath": path, "content": content, "structuredPatch": []any{},
		"originalFile": nil, "userModified": false}
	text := "File created successfully at: " + path
	if existed {
		var hunk []string
		old := splitLines(string(before))
		for _, l := range old {
			hunk = append(hunk, "-"+l)
		}
		for _, l := range splitLines(content) {
			hunk = append(hunk, "+"+l)
		}
		result["type"], result["originalFile"] = "update", string(before)
		result["structuredPatch"] = []any{map[string]any{"oldStart": 1, "oldLines": len(old), "newStart": 1,
			"newLines": len(splitLines(content)), "lines": hunk}}
		text = "The file " + path + " has been updated."
	}
	block := map[string]any{"tool_use_id": id, "type": "tool_result", "content": text}
	f.out.line(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{block}},
		"parent_tool_use_id": nil, "session_id": f.sessionID, "uuid": uuid.NewString(), "timestamp": now(),
		"tool_use_result": result})
}

// splitLines is s's lines without the newlines; none for "".
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
