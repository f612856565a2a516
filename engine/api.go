package engine

import "github.com/cc-connect/cc-connect/engine/conv"

// The conversation's types and defaults that the engine's users configure
// or read, under the engine's name (they are conv's).
type (
	// TeamOptions are the engine-wide settings of the team features.
	TeamOptions = conv.TeamOptions
	// Metrics is what the engine reports for monitoring.
	Metrics = conv.Metrics
	// Schedules is the scheduler as the engine uses it.
	Schedules = conv.Schedules
	// RecordInfo is a conversation's record as `cc-connect sessions` lists it.
	RecordInfo = conv.RecordInfo
)

// Defaults of the conversations' settings.
const (
	DefaultAttachmentMaxBytes = conv.DefaultAttachmentMaxBytes
	DefaultSendFileMaxBytes   = conv.DefaultSendFileMaxBytes
)

// DefaultAllowedModes are the permission modes !mode may set when
// Options.AllowedModes is empty.
var DefaultAllowedModes = conv.DefaultAllowedModes

// ReadRecords reads every conversation record under stateDir.
func ReadRecords(stateDir string) ([]RecordInfo, error) { return conv.ReadRecords(stateDir) }
