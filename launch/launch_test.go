package launch

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentenv"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

func keys(env []string) []string {
	out := make([]string, len(env))
	for i, kv := range env {
		out[i], _, _ = strings.Cut(kv, "=")
	}
	return out
}

// TestEnviron: what a child inherits, case by case. A secret never
// passes, by its variable's name or by its value, wherever it comes
// from: cc-connect's environment, Rule.Env, or a Spec's own settings.
func TestEnviron(t *testing.T) {
	secrets := agentenv.NewSecretVars("SLACK_SOURCE")
	secrets.AddValues("xoxb-the-token", "hook-secret-value")
	base := []string{"PATH=/bin", "HOME=/root", "SLACK_SOURCE=xoxb-the-token", "COPY=xoxb-the-token",
		"HOOK_COPY=hook-secret-value", "GITHUB_TOKEN=ghp", "GIT_DIR=/x", "EMPTY=", "TMPDIR=/var/lib/cc-connect/tmp"}
	tests := []struct {
		name         string
		rule         Rule
		extra, drops []string
		want         []string // KEY=VALUE, in order
	}{
		{
			name: "secrets by name and by value, and the drop list",
			rule: Rule{Secrets: secrets, EnvDrop: agentenv.DefaultEnvDrop},
			want: []string{"PATH=/bin", "HOME=/root", "GIT_DIR=/x", "EMPTY=", "TMPDIR=/var/lib/cc-connect/tmp"},
		},
		{
			name: "Env adds, overrides, and never passes a secret",
			rule: Rule{Secrets: secrets, Env: map[string]string{"HOME": "/srv", "X": "hook-secret-value", "SLACK_SOURCE": "other", "Y": "y"}},
			want: []string{"PATH=/bin", "HOME=/srv", "GITHUB_TOKEN=ghp", "GIT_DIR=/x", "EMPTY=", "TMPDIR=/var/lib/cc-connect/tmp", "Y=y"},
		},
		{
			name: "defaults fill only what is unset",
			rule: Rule{Secrets: secrets, Defaults: [][2]string{{"PATH", "/usr/bin"}, {"NEW", "1"}, {"Y", "d"}}, Env: map[string]string{"Y": "y"}},
			want: []string{"PATH=/bin", "HOME=/root", "GITHUB_TOKEN=ghp", "GIT_DIR=/x", "EMPTY=", "TMPDIR=/var/lib/cc-connect/tmp", "NEW=1", "Y=y"},
		},
		{
			name:  "a spec's own settings come last, its prefixes dropped from the rest",
			rule:  Rule{Secrets: secrets, Env: map[string]string{"GIT_X": "from-env"}},
			extra: []string{"GIT_CONFIG_GLOBAL=/dev/null", "LEAK=xoxb-the-token"},
			drops: []string{"GIT_"},
			want:  []string{"PATH=/bin", "HOME=/root", "GITHUB_TOKEN=ghp", "EMPTY=", "TMPDIR=/var/lib/cc-connect/tmp", "GIT_CONFIG_GLOBAL=/dev/null"},
		},
		{
			name: "another user's HOME, USER and LOGNAME, and not cc-connect's TMPDIR",
			rule: Rule{User: &agentenv.User{Name: "agent", UID: uint32(os.Geteuid()) + 1, Home: "/home/agent"}, Secrets: secrets},
			want: []string{"PATH=/bin", "GITHUB_TOKEN=ghp", "GIT_DIR=/x", "EMPTY=", "HOME=/home/agent", "USER=agent", "LOGNAME=agent"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.rule.environ(base, tt.extra, tt.drops)
			if !slices.Equal(got, tt.want) {
				t.Errorf("environ =\n %q\nwant\n %q", got, tt.want)
			}
		})
	}
	r := Rule{Secrets: secrets, EnvDrop: agentenv.DefaultEnvDrop}
	for kv, want := range map[string]string{
		"SLACK_SOURCE=anything":   "config secret",
		"INNOCENT=xoxb-the-token": "value of a config secret",
		"GITHUB_TOKEN=ghp":        "agent.env_drop *_TOKEN",
		"PATH=/bin":               "",
	} {
		k, v, _ := strings.Cut(kv, "=")
		if got := r.DropReason(k, v); got != want {
			t.Errorf("DropReason(%s) = %q, want %q", kv, got, want)
		}
	}
}

// TestStartAppliesTheRule: a started child has the rule's environment
// (no secret of cc-connect's) and leads a process group of its own.
func TestStartAppliesTheRule(t *testing.T) {
	t.Setenv("CCX_LAUNCH_SOURCE", "ccx-launch-canary-71d")
	t.Setenv("CCX_LAUNCH_COPY", "ccx-launch-value-52e")
	secrets := agentenv.NewSecretVars("CCX_LAUNCH_SOURCE")
	secrets.AddValues("ccx-launch-value-52e")
	var out strings.Builder
	cmd, err := Start(Rule{Secrets: secrets, Env: map[string]string{"CCX_GIVEN": "given"}}, Spec{
		Path: "sh", Args: []string{"-c", `echo pid=$$ pgid=$(cut -d' ' -f5 /proc/$$/stat); env`},
		Dir: t.TempDir(), Stdout: &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, leak := range []string{"ccx-launch-canary-71d", "ccx-launch-value-52e", "CCX_LAUNCH_SOURCE"} {
		if strings.Contains(text, leak) {
			t.Errorf("the child's environment holds %q", leak)
		}
	}
	if !strings.Contains(text, "CCX_GIVEN=given") {
		t.Errorf("Rule.Env did not reach the child:\n%s", text)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	if !strings.Contains(text, "pid="+pid+" pgid="+pid+"\n") {
		t.Errorf("the child does not lead its own process group:\n%s", strings.SplitN(text, "\n", 2)[0])
	}
}

// TestRunKillsTheGroupOnCancel: cancelling Run's context ends the child
// and what it started in the background.
func TestRunKillsTheGroupOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Rule{}, Spec{Path: "/bin/sh", Args: []string{"-c", "sleep 300 & echo $!; wait"}, Stdout: pw})
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	grandchild, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	cancel()
	err = <-done
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("Run after cancel = %v, want the child killed", err)
	}
	// Killed, the grandchild becomes a zombie of init or is reaped: poll
	// /proc, there is no event for another process's end.
	deadline := time.Now().Add(testenv.HangLimit(t, 10*time.Second))
	for alive(grandchild) {
		if time.Now().After(deadline) {
			t.Fatalf("the background sleep %d survived", grandchild)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// TestStartAsAnotherUser: with agent.user the child runs as that user,
// with its groups only and its HOME.
func TestStartAsAnotherUser(t *testing.T) {
	testenv.NeedRoot(t, "starting a process as another user")
	nobody, err := agentenv.LookupUser("nobody")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	err = Run(context.Background(), Rule{User: nobody}, Spec{Path: "/bin/sh", Args: []string{"-c", `id -u; id -G; echo "$HOME"`}, Dir: "/", Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	groups := make([]string, len(nobody.Groups))
	for i, g := range nobody.Groups {
		groups[i] = strconv.Itoa(int(g))
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || lines[0] != strconv.Itoa(int(nobody.UID)) || lines[2] != nobody.Home {
		t.Fatalf("as nobody: %q", lines)
	}
	got := strings.Fields(lines[1])
	slices.Sort(got)
	slices.Sort(groups)
	if !slices.Equal(got, groups) {
		t.Errorf("groups %q, want nobody's %q only", got, groups)
	}
	var cred *syscall.Credential = Rule{User: nobody}.Credential()
	if cred == nil || cred.Uid != nobody.UID {
		t.Errorf("Credential = %+v", cred)
	}
}
