package cluster

import (
	"context"
	"fmt"

	"github.com/cc-connect/cc-connect/cluster/kvlease"
	"github.com/cc-connect/cc-connect/format"
)

// checkFormats refuses to join, before this host takes any lease or
// writes its heartbeat, a cluster where another host that is up writes a
// newer format (package format) than this build reads: its events in the
// stream would be refused here one by one (docs/cluster.md, Rolling
// upgrades). A host whose heartbeat is older than its TTL is not counted:
// what it left in the stream is refused by the consumer as it comes,
// which leaves it for a host that reads it.
func (n *Node) checkFormats(ctx context.Context) error {
	snap, err := kvlease.ReadSnapshot(ctx, n.js, n.kv)
	if err != nil {
		return fmt.Errorf("reading the formats the cluster's hosts write: %w", err)
	}
	for _, m := range snap.Members {
		if m.Member.Host == n.s.Host || !m.Up() {
			continue
		}
		if err := format.Check(fmt.Sprintf("what host %s (cc-connect %s) writes", m.Member.Host, m.Member.Version), m.Member.Format); err != nil {
			return err
		}
	}
	return nil
}
