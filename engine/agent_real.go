package engine

import (
	"context"
	"log/slog"

	"github.com/cc-connect/cc-connect/agentproc"
)

// realProcess is a claude CLI process as the engine drives it.
type realProcess struct {
	*agentproc.Process
}

var _ agentProcess = realProcess{}

func (p realProcess) StartTurn(ctx context.Context, msg agentproc.UserMessage) (agentTurn, error) {
	t, err := p.Process.StartTurn(ctx, msg)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// startAgent is the production spawnFunc: a real claude CLI process.
func startAgent(ctx context.Context, cfg agentproc.Config, opts agentproc.StartOptions, log *slog.Logger) (agentProcess, error) {
	p, err := agentproc.Start(ctx, cfg, opts, log)
	if err != nil {
		return nil, err
	}
	return realProcess{p}, nil
}

// diskTranscripts reads the transcripts the CLI writes under its config
// directory: the one the agent's environment selects, in agent.user's home
// when the agent runs as another user.
type diskTranscripts struct {
	configDir string
}

var _ transcripts = diskTranscripts{}

func newDiskTranscripts(cfg agentproc.Config) diskTranscripts {
	return diskTranscripts{configDir: agentproc.ConfigDirFor(cfg)}
}

func (d diskTranscripts) Find(sessionID string) (string, int64, error) {
	return agentproc.FindTranscript(d.configDir, sessionID)
}

func (d diskTranscripts) List(cwd string) ([]sessionInfo, error) {
	lites, err := agentproc.ListSessions(d.configDir, cwd)
	if err != nil {
		return nil, err
	}
	out := make([]sessionInfo, 0, len(lites))
	for _, l := range lites {
		out = append(out, sessionInfo{SessionID: l.SessionID, Size: l.Size, ModTime: l.ModTime,
			FirstPrompt: orDefault(l.FirstPrompt, l.Title), BadID: !agentproc.ValidSessionID(l.SessionID)})
	}
	return out, nil
}

func (diskTranscripts) Contains(path, u string) (bool, error) { return agentproc.ContainsUUID(path, u) }

func (diskTranscripts) End(path string) (agentproc.Interruption, error) {
	return agentproc.ClassifyEnd(path)
}

func (diskTranscripts) ReplyAfter(path, u string) (string, error) {
	text, _, err := agentproc.ReplyAfter(path, u)
	return text, err
}
