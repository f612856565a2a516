package config

import (
	"strings"
	"testing"
)

// TestLimitsRefuseOverflowAndNonsense: a size, duration or count past what
// it can mean is refused, naming the key (attachment_max_size at the
// largest int64 used to make every download read nothing).
func TestLimitsRefuseOverflowAndNonsense(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want string
	}{
		{"attachment size at int64 max", "[files]\nattachment_max_size = 9223372036854775807\n",
			"files.attachment_max_size: 9223372036854775807 bytes is too large: at most 1GiB"},
		{"attachment size past memory", "[files]\nattachment_max_size = \"2GiB\"\n", "files.attachment_max_size: 2GiB is too large"},
		{"size that overflows its unit", "[files]\nartifact_quota = \"9999999999999GiB\"\n", `files.artifact_quota: "9999999999999GiB" is not a size`},
		{"quota past any disk", "[files]\nartifact_quota = 9223372036854775807\n", "files.artifact_quota: 9223372036854775807 bytes is too large: at most 1024GiB"},
		{"duration that overflows", "[agent]\nidle_timeout = \"9999999999h\"\n", `agent.idle_timeout: "9999999999h" is not a duration`},
		{"idle timeout past a year", "[agent]\nidle_timeout = \"9000h\"\n", "agent.idle_timeout: 9000h0m0s is too long: at most 8760h0m0s"},
		{"shutdown grace past a year", "[agent]\nshutdown_grace = \"2562047h\"\n", "agent.shutdown_grace: 2562047h0m0s is too long"},
		{"seen window past a year", "[state]\nseen_window = \"10000h\"\n", "state.seen_window: 10000h0m0s is too long"},
		{"permission timeout past a year", "[agent]\npermission_timeout = \"9000h\"\n", "agent.permission_timeout: 9000h0m0s is too long"},
		{"close grace past a year", "[agent]\nclose_grace = \"9000h\"\n", "agent.close_grace: 9000h0m0s is too long"},
		{"shell timeout past a year", "[agent]\nshell_timeout = \"9000h\"\n", "agent.shell_timeout: 9000h0m0s is too long"},
		{"queue limit at int max", "[agent]\nqueue_limit = 9223372036854775807\n", "agent.queue_limit: 9223372036854775807 is too large: at most 1000"},
		{"context window past any model", "[agent]\ncontext_window = 9223372036854775807\n", "agent.context_window: 9223372036854775807 is too large"},
		{"prewarm past the bound", "[agent]\nprewarm = 9\nmax_processes_per_workspace = 0\n", "agent.prewarm: 9 is too large: at most 8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := load(writeConfig(t, minimal+tt.text), envMap(nil))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("load = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	// At the bounds, values load.
	text := minimal + "[files]\nattachment_max_size = \"1GiB\"\nartifact_quota = \"1024GiB\"\n[agent]\nidle_timeout = \"8760h\"\nqueue_limit = 1000\nprewarm = 8\nmax_processes_per_workspace = 0\n"
	if _, err := load(writeConfig(t, text), envMap(nil)); err != nil {
		t.Errorf("values at the bounds: %v", err)
	}
}

// TestDangerousSettingsWarn: check, doctor and run warn about settings
// that turn off what keeps the agent in check.
func TestDangerousSettingsWarn(t *testing.T) {
	t.Parallel()
	const binding = "[[bindings]]\nplatform = \"local\"\nchannel = \"local\"\nworkspace = \"ws\"\nallow_users = [\"*\"]\n"
	tests := []struct {
		name string
		text string
		want []string // one warning each; nil: no warning at all
	}{
		{"plain", minimal, nil},
		{"everyone an admin", minimal + binding + "admins = [\"*\"]\nallow_shell = true\n",
			[]string{`bindings[1].admins = ["*"]: everyone allowed in this binding is an admin: they may resume any session id and run shell commands with !sh`}},
		{"bypass allowed for !mode", minimal + "[agent]\nallowed_modes = [\"default\", \"bypassPermissions\"]\n",
			[]string{`agent.allowed_modes[1] = "bypassPermissions" lets anyone in a bound channel send !mode bypassPermissions`}},
		{"bypass as the mode", minimal + "[agent]\npermission_mode = \"bypassPermissions\"\n",
			[]string{`agent.permission_mode = "bypassPermissions" turns off Claude Code's permission prompts`}},
		{"skip flag in args", minimal + "[agent]\nargs = [\"--dangerously-skip-permissions\"]\n",
			[]string{`agent.args[0] = "--dangerously-skip-permissions" turns off Claude Code's permission prompts`}},
		{"allow-skip flag in args", minimal + "[agent]\nargs = [\"--allow-dangerously-skip-permissions\"]\n",
			[]string{`agent.args[0] = "--allow-dangerously-skip-permissions" lets the session switch to bypassPermissions`}},
		{"mode flag in args, two words", minimal + "[agent]\nargs = [\"--verbose\", \"--permission-mode\", \"bypassPermissions\"]\n",
			[]string{"agent.args[1]: --permission-mode bypassPermissions turns off Claude Code's permission prompts"}},
		{"mode flag in args, one word", minimal + "[agent]\nargs = [\"--permission-mode=bypassPermissions\"]\n",
			[]string{"agent.args[0]: --permission-mode bypassPermissions turns off"}},
		{"other mode in args", minimal + "[agent]\nargs = [\"--permission-mode\", \"plan\"]\n",
			[]string{"agent.args[0]: --permission-mode in agent.args overrides agent.permission_mode and !mode"}},
		{"prompt tool in args", minimal + "[agent]\nargs = [\"--permission-prompt-tool\", \"mcp__x\"]\n",
			[]string{"agent.args[0]: --permission-prompt-tool in agent.args takes permission prompts away from the chat"}},
		{"bypass allowed for !mode in a binding", minimal + binding + "allowed_modes = [\"plan\", \"bypassPermissions\"]\n",
			[]string{`bindings[1].allowed_modes[1] = "bypassPermissions" lets anyone in this binding's channels send !mode bypassPermissions, which turns off Claude Code's permission prompts`}},
		{"skip flag in a binding's args", minimal + binding + "args = [\"--dangerously-skip-permissions\"]\n",
			[]string{`bindings[1].args[0] = "--dangerously-skip-permissions" turns off Claude Code's permission prompts`}},
		{"mode flag in a binding's args", minimal + binding + "args = [\"--permission-mode=bypassPermissions\"]\n",
			[]string{"bindings[1].args[0]: --permission-mode bypassPermissions turns off"}},
		{"allow-skip flag in a binding's args", minimal + binding + "args = [\"--verbose\", \"--allow-dangerously-skip-permissions\"]\n",
			[]string{`bindings[1].args[1] = "--allow-dangerously-skip-permissions" lets the session switch to bypassPermissions`}},
		{"a tiny seen window", minimal + "[state]\nseen_window = \"1m\"\n",
			[]string{"state.seen_window is 1m0s: platforms redeliver messages for up to an hour"}},
		{"a tiny permission timeout", minimal + "[agent]\npermission_timeout = \"1s\"\n",
			[]string{"agent.permission_timeout is 1s: a permission request is denied before anyone can answer it"}},
		{"spares as many as a workspace's slots", minimal + "[agent]\nprewarm = 2\nmax_processes_per_workspace = 2\n",
			[]string{"agent.prewarm (2) is not below agent.max_processes_per_workspace (2): spares may fill a workspace's slots"}},
		{"spares with no workspace cap", minimal + "[agent]\nprewarm = 4\nmax_processes_per_workspace = 0\n", nil},
		{"attachments larger than the quota", minimal + "[files]\nattachment_max_size = \"100MiB\"\n",
			[]string{"files.attachment_max_size (100MiB) is larger than files.artifact_quota (64MiB)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := load(writeConfig(t, tt.text), envMap(nil))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range cfg.Warnings {
				if !strings.Contains(w, "bypassPermissions when run as root") { // TestBypassPermissionsAsRootWarns
					got = append(got, w)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("warnings = %q, want %d", got, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %q lacks %q", got[i], w)
				}
			}
		})
	}
}
