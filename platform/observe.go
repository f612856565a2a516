package platform

// ObserveStatus reports a change of an adapter's connection state to o: a
// change to a failure (ConnState.Failure) is a platform error, and so is
// each report of a transient disconnect, which an adapter makes once per
// attempt that failed; Connected after a failure (an adapter that retries
// after it) is a reconnect. Every adapter sets its state where its
// connection changes, so this is the one place that needs to count them.
// A nil o ignores everything.
func ObserveStatus(o Observer, platform string, old, cur ConnStatus) {
	if o == nil || old == cur && cur.State != TransientDisconnect {
		return
	}
	switch {
	case cur.State.Failure():
		o.PlatformError(platform)
	case cur.State == Connected && old.State.Failure():
		o.Reconnect(platform)
	}
}
