package main

import (
	"context"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/cluster"
	"github.com/cc-connect/cc-connect/console"
)

// The console's cluster page reads the report `cc-connect cluster status`
// prints (cluster.Node.Status, the one reader), narrowed to the bindings
// the person may use; the hosts and the other leases are shown to anyone
// who may use one binding.

var _ console.ClusterStatus = (*consoleBackend)(nil)

// hostsTimeout bounds the read of the cluster for the conversations
// page's Host column; past it, the column shows the binding's owner.
const hostsTimeout = 2 * time.Second

// Cluster is the cluster as who may see it; nil when this host runs alone.
func (b *consoleBackend) Cluster(ctx context.Context, who console.Identity) (*console.ClusterView, error) {
	if b.cluster == nil {
		return nil, nil
	}
	mine := b.mine(who)
	if len(mine) == 0 {
		return &console.ClusterView{}, nil
	}
	r, err := b.cluster(ctx)
	if err != nil {
		return nil, err
	}
	v := &console.ClusterView{Reader: r.Reader, At: r.At}
	for _, h := range r.Hosts {
		v.Hosts = append(v.Hosts, console.ClusterHost{Name: h.Name, Member: h.Member, Seen: h.Seen, Up: h.Up, HeartbeatAge: h.HeartbeatAge,
			Version: h.Version, SameConfig: h.SameConfig, Holds: h.Holds, Draining: h.Draining})
	}
	for _, bs := range r.Bindings {
		if mine[bs.Binding] {
			v.Bindings = append(v.Bindings, console.ClusterBinding{Binding: bs.Binding, Owner: bs.Owner, Standby: bs.Standby,
				ClusterLease: leaseOf(bs.LeaseStatus), Waiting: bs.Waiting, InHand: bs.InHand})
		}
	}
	for _, l := range r.Leases {
		v.Leases = append(v.Leases, leaseOf(l))
	}
	for _, c := range r.Conversations {
		if !mine[c.Binding] {
			continue
		}
		plat, _, _ := strings.Cut(c.Binding, "/")
		cc := console.ClusterConversation{Binding: c.Binding, Channel: c.Channel, Thread: c.Thread, ServedBy: c.ServedBy,
			LastAnswered: c.LastAnswered, At: c.At, Replicated: c.Replicated, Context: c.Context}
		if key := plat + "/" + c.Channel + "/" + c.Thread; plat == who.Platform {
			if _, ok := b.view.Conversation(key, who.UserID); ok {
				cc.Key = key
			}
		}
		v.Conversations = append(v.Conversations, cc)
	}
	return v, nil
}

// holders are the hosts holding the bindings' leases now, for the
// conversations page; nil alone, or when the cluster cannot be read in
// time (the page then shows each binding's owner).
func (b *consoleBackend) holders(ctx context.Context) map[string]string {
	if b.cluster == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, hostsTimeout)
	defer cancel()
	r, err := b.cluster(ctx)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, bs := range r.Bindings {
		if !bs.Expired {
			out[bs.Binding] = bs.Holder
		}
	}
	return out
}

func leaseOf(l cluster.LeaseStatus) console.ClusterLease {
	return console.ClusterLease{Key: l.Key, Holder: l.Holder, Age: l.Age, Expired: l.Expired, Token: l.Token}
}

// mine are the keys of the bindings in force on who's platform that
// allow them.
func (b *consoleBackend) mine(who console.Identity) map[string]bool {
	out := map[string]bool{}
	for _, bd := range b.view.Bindings(who.Platform, who.UserID) {
		out[bd.Key] = true
	}
	return out
}
