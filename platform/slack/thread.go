package slack

import "github.com/cc-connect/cc-connect/platform"

var _ platform.Threader = (*Adapter)(nil)

// ThreadUnder is the thread under a posted message: in Slack its ts, the
// thread_ts its replies carry.
func (a *Adapter) ThreadUnder(posted platform.Target) platform.Target {
	return platform.Target{Platform: posted.Platform, Channel: posted.Channel, Thread: posted.MessageID}
}
