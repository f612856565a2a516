package platform

import "strings"

// ObserveStatus reports a connection state change to o, for adapters whose
// Statuser states follow the common words: a state of "reconnecting: …",
// "error: …" or "stopped: …" is a failure, and "connected" after
// "reconnecting" or "error" (an adapter that retries after it) is a
// reconnect. Every adapter sets its state where its
// connection changes, so this is the one place that needs to count them.
// A nil o ignores everything.
func ObserveStatus(o Observer, platform, old, cur string) {
	if o == nil || old == cur && !strings.HasPrefix(cur, "reconnecting") {
		return
	}
	switch {
	case strings.HasPrefix(cur, "reconnecting"), strings.HasPrefix(cur, "error"), strings.HasPrefix(cur, "stopped: "):
		o.PlatformError(platform)
	case cur == "connected" && (strings.HasPrefix(old, "reconnecting") || strings.HasPrefix(old, "error")):
		o.Reconnect(platform)
	}
}
