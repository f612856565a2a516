package console

import (
	"context"
	"net/http"
	"time"
)

// The cluster page: hosts, leases and which host serves each
// conversation, as `cc-connect cluster status` reads them (the Backend's
// reader is the same). A Backend in a cluster offers it by implementing
// ClusterStatus; alone, the page says so.

// ClusterView is the cluster as one person may see it: every host, and
// the bindings and conversations of the bindings that allow them.
type ClusterView struct {
	Reader        string    // the host that read it
	At            time.Time // the NATS server's time of reading
	Hosts         []ClusterHost
	Bindings      []ClusterBinding
	Leases        []ClusterLease // the other leases (pollers, shards)
	Conversations []ClusterConversation
}

// ClusterHost is one host's health.
type ClusterHost struct {
	Name         string
	Member       bool // in cluster.members
	Seen, Up     bool // wrote a heartbeat; within one lease TTL
	HeartbeatAge time.Duration
	Version      string
	SameConfig   bool
	Holds        int
	Draining     bool // a drain asked for since its run started
}

// ClusterBinding is one binding's lease.
type ClusterBinding struct {
	Binding string
	Owner   string
	Standby []string
	ClusterLease
	Waiting uint64 // events not yet delivered
	InHand  int    // delivered to the holder, not finished
}

// ClusterLease is one lease: Holder "" when nobody holds it.
type ClusterLease struct {
	Key     string
	Holder  string
	Age     time.Duration // since the holder last renewed it
	Expired bool
	Token   uint64
}

// ClusterConversation is where one conversation is served.
type ClusterConversation struct {
	Key          string // the console's conversation key ("" when none)
	Binding      string
	Channel      string
	Thread       string
	ServedBy     string // the binding's holder now
	LastAnswered string // the host whose disk has its context
	At           time.Time
	Replicated   bool
	Context      string
}

// ClusterStatus is a Backend's cluster: nil without a cluster.
type ClusterStatus interface {
	Cluster(ctx context.Context, who Identity) (*ClusterView, error)
}

func (s *Server) cluster(w http.ResponseWriter, r *http.Request, sess *session) {
	cs, ok := s.backend.(ClusterStatus)
	var v *ClusterView
	if ok {
		var err error
		if v, err = cs.Cluster(r.Context(), sess.who); err != nil {
			s.log.Warn("Reading the cluster for the console failed", "error", err)
			http.Error(w, "Could not read the cluster (the log has the details).", http.StatusInternalServerError)
			return
		}
	}
	if v == nil {
		s.page(w, http.StatusOK, "message", pageData{Title: "Cluster", Session: sess, Message: "This cc-connect runs alone, not in a cluster."})
		return
	}
	s.page(w, http.StatusOK, "cluster", pageData{Title: "Cluster", Session: sess, Cluster: v})
}
