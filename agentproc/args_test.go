package agentproc

import (
	"errors"
	"slices"
	"testing"
)

var baseArgs = []string{
	"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
	"--permission-prompt-tool", "stdio", "--system-prompt-snapshot", "off",
}

func TestBuildArgs(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		opts StartOptions
		want []string
	}{
		{name: "new session", want: baseArgs},
		{
			name: "host tools after the admin's args",
			cfg:  Config{Args: []string{"--allowedTools", "Bash(ls:*)"}},
			opts: StartOptions{Tools: []HostTool{{Name: "send_file"}}},
			want: append(slices.Clone(baseArgs), "--allowedTools", "Bash(ls:*)", "--allowedTools", "mcp__cc-connect__send_file"),
		},
		{
			name: "no host tools when read-only",
			opts: StartOptions{ReadOnly: true, Tools: []HostTool{{Name: "send_file"}}},
			want: append(slices.Clone(baseArgs), "--tools", "Read,Grep,Glob", "--disallowedTools", "mcp__*", "--permission-mode", "plan"),
		},
		{
			name: "resume",
			opts: StartOptions{ResumeID: "abc"},
			want: append(slices.Clone(baseArgs), "--resume", "abc"),
		},
		{
			name: "fork with fixed id",
			opts: StartOptions{ResumeID: "abc", Fork: true, SessionID: "def"},
			want: append(slices.Clone(baseArgs), "--resume", "abc", "--fork-session", "--session-id", "def"),
		},
		{
			name: "fork ignored without resume",
			opts: StartOptions{Fork: true},
			want: baseArgs,
		},
		{
			name: "config model and mode",
			cfg:  Config{Model: "m1", PermissionMode: "acceptEdits"},
			want: append(slices.Clone(baseArgs), "--model", "m1", "--permission-mode", "acceptEdits"),
		},
		{
			name: "start options override config",
			cfg:  Config{Model: "m1", PermissionMode: "acceptEdits"},
			opts: StartOptions{Model: "m2", PermissionMode: "plan"},
			want: append(slices.Clone(baseArgs), "--model", "m2", "--permission-mode", "plan"),
		},
		{
			name: "append system prompt, passed as one argument",
			cfg:  Config{AppendSystemPrompt: "be brief; don't $(rm -rf)"},
			want: append(slices.Clone(baseArgs), "--append-system-prompt", "be brief; don't $(rm -rf)"),
		},
		{
			name: "read only after everything the config adds",
			cfg:  Config{PermissionMode: "bypassPermissions", Args: []string{"--tools", "default", "--permission-mode", "acceptEdits"}},
			opts: StartOptions{ResumeID: "abc", Fork: true, ReadOnly: true},
			want: append(slices.Clone(baseArgs), "--resume", "abc", "--fork-session", "--permission-mode", "bypassPermissions",
				"--tools", "default", "--permission-mode", "acceptEdits",
				"--tools", "Read,Grep,Glob", "--disallowedTools", "mcp__*", "--permission-mode", "plan"),
		},
		{
			name: "partial messages for a streamed reply",
			opts: StartOptions{ResumeID: "abc", PartialMessages: true},
			want: append(slices.Clone(baseArgs), "--resume", "abc", "--include-partial-messages"),
		},
		{
			name: "extra args last",
			cfg:  Config{Args: []string{"--add-dir", "/x"}, Model: "m"},
			opts: StartOptions{SessionID: "id"},
			want: append(slices.Clone(baseArgs), "--session-id", "id", "--model", "m", "--add-dir", "/x"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BuildArgs(tt.cfg, tt.opts)
			if !slices.Equal(got, tt.want) {
				t.Errorf("BuildArgs =\n %q\nwant\n %q", got, tt.want)
			}
		})
	}
}

func TestBuildEnv(t *testing.T) {
	tests := []struct {
		name string
		base []string
		env  map[string]string
		want []string
	}{
		{
			name: "defaults added",
			base: []string{"HOME=/h"},
			want: []string{"HOME=/h", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"},
		},
		{
			name: "base keeps its own default values",
			base: []string{"DISABLE_AUTOUPDATER=0"},
			want: []string{"DISABLE_AUTOUPDATER=0", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"},
		},
		{
			name: "config env wins over base and defaults",
			base: []string{"HOME=/h", "PATH=/bin"},
			env:  map[string]string{"HOME": "/other", "DISABLE_AUTOUPDATER": "0", "ANTHROPIC_API_KEY": "k"},
			want: []string{"HOME=/other", "PATH=/bin", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
				"ANTHROPIC_API_KEY=k", "DISABLE_AUTOUPDATER=0"},
		},
		{
			name: "keys keep their case",
			base: []string{"Path=/a"},
			env:  map[string]string{"PATH": "/b"},
			want: []string{"Path=/a", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "PATH=/b"},
		},
		{
			name: "duplicate base keys collapse to the last",
			base: []string{"A=1", "A=2"},
			want: []string{"A=2", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"},
		},
		{
			// The CLI would keep its config in its working directory.
			name: "an empty CLAUDE_CONFIG_DIR is dropped, hiding the base's",
			base: []string{"CLAUDE_CONFIG_DIR=/base", "HOME=/h"},
			env:  map[string]string{"CLAUDE_CONFIG_DIR": ""},
			want: []string{"HOME=/h", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"},
		},
		{
			name: "an empty CLAUDE_CONFIG_DIR in base is dropped",
			base: []string{"CLAUDE_CONFIG_DIR="},
			want: []string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"},
		},
		{
			name: "values with equals signs survive",
			env:  map[string]string{"X": "a=b"},
			want: []string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "X=a=b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BuildEnv(tt.base, Config{Env: tt.env})
			if !slices.Equal(got, tt.want) {
				t.Errorf("BuildEnv =\n %q\nwant\n %q", got, tt.want)
			}
		})
	}
}

// TestStartRefusesIDsThatCouldBeFlags: Claude Code's --resume takes an
// optional value, so an id such as "--dangerously-skip-permissions" would
// be parsed as that flag. Start must refuse it before any process exists.
func TestStartRefusesIDsThatCouldBeFlags(t *testing.T) {
	for _, opts := range []StartOptions{
		{ResumeID: "--dangerously-skip-permissions"},
		{ResumeID: "-p"},
		{ResumeID: "my session title"},
		{ResumeID: "0b3c6c1e-2f7e-4a53-9b7e-2f1d0a9c1234 --verbose"},
		{SessionID: "--fork-session"},
		{ResumeID: "{0b3c6c1e-2f7e-4a53-9b7e-2f1d0a9c1234}"},
	} {
		// A command that cannot exist: reaching LookPath would be a
		// different error.
		_, err := Start(t.Context(), Config{Command: "/nonexistent/claude"}, opts, nil)
		if !errors.Is(err, ErrInvalidSessionID) {
			t.Errorf("Start(%+v) = %v, want ErrInvalidSessionID", opts, err)
		}
	}
	if !ValidSessionID("0B3C6C1E-2F7E-4A53-9B7E-2F1D0A9C1234") || !ValidSessionID("0b3c6c1e-2f7e-4a53-9b7e-2f1d0a9c1234") {
		t.Error("a canonical UUID was refused")
	}
}
