package conv

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/chatprompt"
	"github.com/cc-connect/cc-connect/ctxindicator"
	"github.com/cc-connect/cc-connect/platform"
)

// A team in one thread: who wrote each prompt (the sender header), what the
// thread said before the bot was called in (thread context), whom to ring
// when a long turn ends or a prompt waits (notify), and a binding's own
// agent setup. The rules are here; the text is chatprompt's.

// TeamOptions are the engine-wide settings of the team features.
type TeamOptions struct {
	// NotifyAfter: a turn that ran at least this long mentions the person
	// who asked when it ends (Setup.NotifyMention). Zero means every turn;
	// negative, never.
	NotifyAfter time.Duration
	// ThreadContext bounds the earlier messages of a thread given with the
	// first prompt of a conversation called into it.
	ThreadContext chatprompt.Bounds
	// ThreadContextOnFresh gives the thread so far to the first prompt of
	// a session started afresh in a conversation that had one.
	ThreadContextOnFresh bool
	// SendFileMaxBytes is the largest file send_file posts (default 20 MiB).
	SendFileMaxBytes int64
}

// DefaultSendFileMaxBytes is TeamOptions.SendFileMaxBytes when zero.
const DefaultSendFileMaxBytes int64 = 20 << 20

// settings is what a binding's conversations run with: the engine's
// options with the binding's overrides, and the team settings in force.
type settings struct {
	opts Options
	// basePrompt is the admin's agent.append_system_prompt, before the
	// engine's own instructions are added (agentConfig).
	basePrompt string
	host       Host // the team settings in force
}

// agentConfig is the agent setup of a conversation of b: Options.Agent
// with b's overrides, the self-report instruction, and the team
// instruction where prompts carry the sender header.
func (st *settings) agentConfig(b binding.Binding, dm bool) agentproc.Config {
	cfg := st.opts.Agent
	cfg.AppendSystemPrompt = st.basePrompt
	s := b.Setup
	if s.Model != nil {
		cfg.Model = *s.Model
	}
	if s.PermissionMode != nil {
		cfg.PermissionMode = *s.PermissionMode
	}
	if s.AppendSystemPrompt != nil {
		cfg.AppendSystemPrompt = *s.AppendSystemPrompt
	}
	if len(s.Args) > 0 {
		cfg.Args = slices.Concat(st.opts.Agent.Args, s.Args)
	}
	if len(s.Env) > 0 {
		env := maps.Clone(st.opts.Agent.Env)
		if env == nil {
			env = make(map[string]string, len(s.Env))
		}
		maps.Copy(env, s.Env)
		cfg.Env = env
	}
	if _, set := cfg.Env[agentproc.CheckpointEnv]; b.CheckpointsOn() && !set {
		// A copy: cfg.Env may still be Options.Agent's own map.
		env := maps.Clone(cfg.Env)
		if env == nil {
			env = make(map[string]string, 1)
		}
		env[agentproc.CheckpointEnv] = "true"
		cfg.Env = env
	}
	if st.opts.SelfReport {
		cfg.AppendSystemPrompt = joinPrompt(cfg.AppendSystemPrompt, ctxindicator.SelfReportInstruction)
	}
	if b.HeaderOn(dm) {
		cfg.AppendSystemPrompt = joinPrompt(cfg.AppendSystemPrompt, chatprompt.TeamInstruction)
	}
	return cfg
}

// modesFor are the modes !mode may set in b's conversations.
func (st *settings) modesFor(b binding.Binding) []string {
	if b.Setup.AllowedModes != nil {
		return b.Setup.AllowedModes
	}
	return st.allowedModes()
}

// wsCapFor is the per-workspace process cap b's conversations wait for.
func (st *settings) wsCapFor(b binding.Binding) int {
	if b.Setup.MaxProcessesPerWorkspace != nil {
		return *b.Setup.MaxProcessesPerWorkspace
	}
	return st.opts.MaxProcessesPerWorkspace
}

// sendFileMax is the largest file send_file posts for b.
func (st *settings) sendFileMax(b binding.Binding) int64 {
	if b.Setup.SendFileMaxBytes != nil {
		return *b.Setup.SendFileMaxBytes
	}
	if st.host.Team().SendFileMaxBytes > 0 {
		return st.host.Team().SendFileMaxBytes
	}
	return DefaultSendFileMaxBytes
}

// attachmentMaxFor is the largest attachment passed on for b.
func (st *settings) attachmentMaxFor(b binding.Binding) int64 {
	if b.Setup.AttachmentMaxBytes != nil {
		return *b.Setup.AttachmentMaxBytes
	}
	return st.attachmentMax()
}

// maxSpeakers bounds the speakers a record keeps.
const maxSpeakers = 50

// noteSpeaker adds who wrote m to the session's speakers (!status).
func (rb *recordBook) noteSpeaker(m platform.Message) {
	if m.UserID == "" {
		return
	}
	clean := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	who := clean(orDefault(m.UserName, m.UserID)) + " (" + clean(m.UserID) + ")"
	rb.change(func(r *Record) {
		list := speakers(*r)
		if slices.Contains(list, who) {
			return
		}
		list = append(list, who)
		if len(list) > maxSpeakers {
			list = list[len(list)-maxSpeakers:]
		}
		r.Speakers = strings.Join(list, "\n")
	})
}

// speakers lists a record's speakers.
func speakers(r Record) []string {
	if r.Speakers == "" {
		return nil
	}
	return strings.Split(r.Speakers, "\n")
}
