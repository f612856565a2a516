package agentproc

import (
	"context"
	"encoding/json"
	"fmt"
)

// CheckpointEnv switches the CLI's file checkpointing on when set to
// "true" in the child's environment (what the Agent SDK's
// enableFileCheckpointing sets). Without it RewindFiles is refused with
// "File rewinding is not enabled." (captures/checkpoints_off).
const CheckpointEnv = "CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING"

// Rewind is the CLI's answer to rewind_files. A dry run lists what
// rewinding would change: Insertions and Deletions count the lines the
// rewind adds and removes, so a turn that wrote three new lines reports
// Deletions 3 (captures/checkpoints).
type Rewind struct {
	CanRewind bool     `json:"canRewind"`
	Error     string   `json:"error,omitempty"` // why not, when CanRewind is false
	Files     []string `json:"filesChanged,omitempty"`
	Inserts   int      `json:"insertions,omitempty"`
	Deletions int      `json:"deletions,omitempty"`
}

// RewindFiles restores the files the session changed since the user
// message userMessageID (a Turn's UUID) to what they were before it
// (control rewind_files); with dryRun it only reports what that would
// change. The CLI answers a rewind to the same message again with success
// and changes nothing, so refusing a second revert is the caller's job.
func (c *controls) RewindFiles(ctx context.Context, userMessageID string, dryRun bool) (Rewind, error) {
	fields := map[string]any{"user_message_id": userMessageID}
	if dryRun {
		fields["dry_run"] = true
	}
	raw, err := c.control(ctx, "rewind_files", fields)
	if err != nil {
		return Rewind{}, err
	}
	var r Rewind
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &r); err != nil {
			return Rewind{}, fmt.Errorf("control request rewind_files: reading the answer: %w", err)
		}
	}
	return r, nil
}

// WorkspaceDiff is the CLI's answer to get_workspace_diff: the git working
// tree against HEAD (or the branch's merge-base), not one turn's changes.
// NoDiffReason is set ("no-repository") when the workspace is no git
// repository, and the rest is empty. An untracked file is listed with no
// line counts.
type WorkspaceDiff struct {
	NoDiffReason string
	FilesCount   int
	LinesAdded   int
	LinesRemoved int
	Files        []DiffFile
}

// DiffFile is one file of a WorkspaceDiff.
type DiffFile struct {
	Path      string `json:"path"`
	Added     int    `json:"added"`
	Removed   int    `json:"removed"`
	Status    string `json:"status"` // added, modified, removed, renamed, copied; "" means modified
	Untracked bool   `json:"isUntracked"`
	Binary    bool   `json:"isBinary"`
}

// WorkspaceDiff asks the CLI for the workspace's diff (control
// get_workspace_diff).
func (c *controls) WorkspaceDiff(ctx context.Context) (WorkspaceDiff, error) {
	raw, err := c.control(ctx, "get_workspace_diff", nil)
	if err != nil {
		return WorkspaceDiff{}, err
	}
	var a struct {
		NoDiffReason string `json:"noDiffReason"`
		Diff         *struct {
			Stats struct {
				FilesCount   int `json:"filesCount"`
				LinesAdded   int `json:"linesAdded"`
				LinesRemoved int `json:"linesRemoved"`
			} `json:"stats"`
			Files []DiffFile `json:"perFileStats"`
		} `json:"diff"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return WorkspaceDiff{}, fmt.Errorf("control request get_workspace_diff: reading the answer: %w", err)
	}
	d := WorkspaceDiff{NoDiffReason: a.NoDiffReason}
	if a.Diff != nil {
		d.FilesCount, d.LinesAdded, d.LinesRemoved = a.Diff.Stats.FilesCount, a.Diff.Stats.LinesAdded, a.Diff.Stats.LinesRemoved
		d.Files = a.Diff.Files
	}
	return d, nil
}

// FilePatch is what one call of a file tool (Write, Edit, MultiEdit)
// reports it changed, read from its tool_use_result
// (captures/checkpoint_turns): an Edit's
// {"filePath","structuredPatch":[{oldStart,oldLines,newStart,newLines,lines}],…},
// a Write that created the file {"type":"create","filePath","content",
// "structuredPatch":[],"originalFile":null}.
type FilePatch struct {
	Path    string // absolute, as the tool was given it
	Created bool   // the call created the file; Content is all of it
	Content string
	Hunks   []Hunk // the lines of each hunk start with ' ', '-' or '+'
}

// Hunk is one hunk of a FilePatch, as in a unified diff.
type Hunk struct {
	OldStart int      `json:"oldStart"`
	OldLines int      `json:"oldLines"`
	NewStart int      `json:"newStart"`
	NewLines int      `json:"newLines"`
	Lines    []string `json:"lines"`
}

// FilePatchOf reads the patch of a file tool's result (ToolResult.Structured);
// false for anything else (another tool's, an error's, a call that
// changed nothing).
func FilePatchOf(structured json.RawMessage) (FilePatch, bool) {
	if len(structured) == 0 {
		return FilePatch{}, false
	}
	var r struct {
		Type     string  `json:"type"`
		FilePath string  `json:"filePath"`
		Content  *string `json:"content"`
		Hunks    []Hunk  `json:"structuredPatch"`
	}
	if json.Unmarshal(structured, &r) != nil || r.FilePath == "" {
		return FilePatch{}, false
	}
	p := FilePatch{Path: r.FilePath, Hunks: r.Hunks}
	if r.Type == "create" && r.Content != nil {
		p.Created, p.Content = true, *r.Content
	}
	if !p.Created && len(p.Hunks) == 0 {
		return FilePatch{}, false
	}
	return p, true
}
