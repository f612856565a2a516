package agentproc

import "strings"

// Claude Code without valid credentials answers every message with an
// error result and no API call (not logged in), or after its retries (a
// key the API refuses): testdata/captures/not_logged_in and
// invalid_api_key. Its text tells a person at a terminal to run /login,
// which a chat cannot do; callers recognise it here and name the fix.

// authTexts begin the CLI's texts for missing or refused credentials.
var authTexts = []string{"Not logged in", "Invalid API key", "OAuth token has expired", "Failed to authenticate"}

// AuthFailed reports whether a turn failed because Claude Code has no
// valid credentials.
func (r *Result) AuthFailed() bool {
	if r == nil || !r.IsError {
		return false
	}
	return r.APIErrorStatus == 401 || IsAuthFailure(r.Text)
}

// IsAuthFailure reports whether a text the CLI wrote (a result's) says it
// has no valid credentials.
func IsAuthFailure(line string) bool {
	line = strings.TrimSpace(line)
	for _, t := range authTexts {
		if strings.HasPrefix(line, t) {
			return true
		}
	}
	return false
}
