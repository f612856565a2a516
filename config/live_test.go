package config

import (
	"strings"
	"testing"
	"time"
)

func TestLiveKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		text     string
		wantErr  string // a fragment of the error; "" loads
		wantWarn string // a fragment of the only warning; "" none
		stall    time.Duration
		maxTurn  time.Duration
		progress string
	}{
		{"defaults", minimal, "", "", 5 * time.Minute, 0, "normal"},
		{"set", minimal + "progress = \"verbose\"\n[agent]\nstall_notice = \"90s\"\nmax_turn_time = \"2h\"\n", "", "", 90 * time.Second, 2 * time.Hour, "verbose"},
		{"quiet", minimal + "progress = \"quiet\"\n", "", "", 5 * time.Minute, 0, "quiet"},
		{"steer", minimal + "follow_ups = \"steer\"\n", "", "", 5 * time.Minute, 0, "normal"},
		{"stall notice off", minimal + "[agent]\nstall_notice = \"0s\"\n", "", "", 0, 0, "normal"},
		{"unknown progress", minimal + "progress = \"loud\"\n", `bindings[0].progress: "loud" is not one of quiet, normal, verbose`, "", 0, 0, ""},
		{"unknown follow_ups", minimal + "follow_ups = \"interrupt\"\n", `bindings[0].follow_ups: "interrupt" is not one of queue, steer`, "", 0, 0, ""},
		{"progress in capitals", minimal + "progress = \"Verbose\"\n", `bindings[0].progress: "Verbose" is not one of`, "", 0, 0, ""},
		{"negative stall", minimal + "[agent]\nstall_notice = \"-1m\"\n", `agent.stall_notice: must be "0s" (off) or more`, "", 0, 0, ""},
		{"negative turn time", minimal + "[agent]\nmax_turn_time = \"-1s\"\n", `agent.max_turn_time: must be "0s" (off) or more`, "", 0, 0, ""},
		{"turn time past a year", minimal + "[agent]\nmax_turn_time = \"9000h\"\n", "agent.max_turn_time: 9000h0m0s is too long", "", 0, 0, ""},
		{"not a duration", minimal + "[agent]\nstall_notice = \"soon\"\n", `agent.stall_notice: "soon" is not a duration`, "", 0, 0, ""},
		{"a tiny turn time", minimal + "[agent]\nmax_turn_time = \"10s\"\n", "", "agent.max_turn_time is 10s: most turns that use a tool take longer", 5 * time.Minute, 10 * time.Second, "normal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := load(writeConfig(t, tt.text), envMap(nil))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("load = %v, want an error naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var warns []string
			for _, w := range cfg.Warnings {
				if !strings.Contains(w, "bypassPermissions when run as root") {
					warns = append(warns, w)
				}
			}
			if (tt.wantWarn == "") != (len(warns) == 0) || (tt.wantWarn != "" && (len(warns) != 1 || !strings.Contains(warns[0], tt.wantWarn))) {
				t.Errorf("warnings = %q, want %q", warns, tt.wantWarn)
			}
			if cfg.Agent.StallNotice.D() != tt.stall || cfg.Agent.MaxTurnTime.D() != tt.maxTurn || cfg.Bindings[0].ProgressOf() != tt.progress {
				t.Errorf("stall_notice %s, max_turn_time %s, progress %q", cfg.Agent.StallNotice, cfg.Agent.MaxTurnTime, cfg.Bindings[0].ProgressOf())
			}
			wantFollow := "queue"
			if strings.Contains(tt.text, `follow_ups = "steer"`) {
				wantFollow = "steer"
			}
			if got := cfg.BindingSpecs()[0].FollowUps; got != wantFollow || cfg.Bindings[0].FollowUpsOf() != wantFollow {
				t.Errorf("follow_ups = %q (binding %q), want %q", cfg.Bindings[0].FollowUpsOf(), got, wantFollow)
			}
			if s := cfg.String(); !strings.Contains(s, "progress = \""+tt.progress+"\"") || !strings.Contains(s, "stall_notice = ") || !strings.Contains(s, "follow_ups = \""+wantFollow+"\"") {
				t.Errorf("the printed config lacks the keys:\n%s", s)
			}
		})
	}
}
