package procs

import (
	"context"
	"log/slog"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
)

// realProcess is a claude CLI process as the engine drives it.
type realProcess struct {
	*agentproc.Process
}

var _ Process = realProcess{}

func (p realProcess) StartTurn(ctx context.Context, msg agentproc.UserMessage) (Turn, error) {
	t, err := p.Process.StartTurn(ctx, msg)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// startAgent is the production spawnFunc: a real claude CLI process.
func Start(ctx context.Context, cfg agentproc.Config, opts agentproc.StartOptions, log *slog.Logger) (Process, error) {
	p, err := agentproc.Start(ctx, cfg, opts, log)
	if err != nil {
		return nil, err
	}
	return realProcess{p}, nil
}

// diskTranscripts reads the transcripts the CLI writes under its config
// directory: the one the agent's environment selects, in agent.user's home
// when the agent runs as another user.
type DiskTranscripts struct {
	configDir string
	cfg       agentproc.Config // whose transcripts (Place writes as its user)
}

var _ Transcripts = DiskTranscripts{}

func NewDiskTranscripts(cfg agentproc.Config) DiskTranscripts {
	return DiskTranscripts{configDir: agentproc.ConfigDirFor(cfg), cfg: cfg}
}

func (d DiskTranscripts) Find(sessionID string) (string, int64, error) {
	return agentproc.FindTranscript(d.configDir, sessionID)
}

func (d DiskTranscripts) List(cwd string) ([]SessionInfo, error) {
	lites, err := agentproc.ListSessions(d.configDir, cwd)
	if err != nil {
		return nil, err
	}
	out := make([]SessionInfo, 0, len(lites))
	for _, l := range lites {
		out = append(out, SessionInfo{SessionID: l.SessionID, Size: l.Size, ModTime: l.ModTime,
			FirstPrompt: orDefault(l.FirstPrompt, l.Title), BadID: !agentproc.ValidSessionID(l.SessionID)})
	}
	return out, nil
}

func (DiskTranscripts) Contains(path, u string) (bool, error) { return agentproc.ContainsUUID(path, u) }

func (DiskTranscripts) Absorbed(path, u string) (bool, error) {
	return agentproc.ContainsAbsorbed(path, u)
}

func (DiskTranscripts) End(path string) (agentproc.Interruption, error) {
	return agentproc.ClassifyEnd(path)
}

func (DiskTranscripts) ReplyAfter(path, u string) (string, error) {
	text, _, err := agentproc.ReplyAfter(path, u)
	return text, err
}

func (d DiskTranscripts) Place(cwd, sessionID string, data []byte, replace bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), placeTimeout)
	defer cancel()
	return agentproc.PlaceTranscriptFor(ctx, d.cfg, cwd, sessionID, data, replace)
}

// placeTimeout bounds writing a transcript taken over from another host
// (as the agent's user, a child process).
const placeTimeout = 30 * time.Second

// Controller is what !model and !mode need from a live process; the
// real one has it. A process without it (a test fake) gets the
// setting at its next spawn only.
type Controller interface {
	SetModel(ctx context.Context, model string) error
	SetPermissionMode(ctx context.Context, mode string) error
}

var _ Controller = realProcess{}
