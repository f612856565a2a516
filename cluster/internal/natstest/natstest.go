// Package natstest starts real NATS JetStream servers for the cluster
// packages' tests: one embedded node, or a cluster of them routed on
// 127.0.0.1, and a TCP proxy that cuts a client off from its server as a
// network partition would. Everything listens on loopback ports the kernel
// picks, and t.Cleanup stops it.
package natstest

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cc-connect/cc-connect/cluster/embedded"
)

// Single starts one JetStream node.
func Single(t testing.TB) *embedded.Server {
	t.Helper()
	s, err := embedded.Start(embedded.Options{Name: "n1", StoreDir: filepath.Join(t.TempDir(), "nats"), Listen: "127.0.0.1:0", Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// Cluster is n routed JetStream nodes.
type Cluster struct {
	Nodes []*embedded.Server
	dirs  []string
}

// StartCluster starts n nodes: the first is the seed the others route to,
// and gossip completes the mesh.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{}
	var seed string
	for i := range n {
		dir := filepath.Join(t.TempDir(), "nats")
		o := embedded.Options{Name: fmt.Sprintf("n%d", i+1), StoreDir: dir, Listen: "127.0.0.1:0",
			ClusterListen: "127.0.0.1:0", Log: quiet()}
		if seed != "" {
			o.Routes = []string{seed}
		}
		s, err := embedded.Start(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Shutdown)
		if seed == "" {
			seed = s.RouteURL()
		}
		c.Nodes = append(c.Nodes, s)
		c.dirs = append(c.dirs, dir)
	}
	// Until every node has routes to all the others, a JetStream asset
	// placed on three peers cannot form. The server has no event for it,
	// so this asks it, the way its own tests do.
	deadline := time.Now().Add(30 * time.Second)
	for _, s := range c.Nodes {
		for s.NATS().NumRoutes() < n-1 {
			if time.Now().After(deadline) {
				t.Fatalf("node %s has %d routes, want %d", s.NATS().Name(), s.NATS().NumRoutes(), n-1)
			}
			time.Sleep(10 * time.Millisecond) // polling the server's state: it offers no notification
		}
	}
	return c
}

// URLs are the client URLs of the nodes still running.
func (c *Cluster) URLs() []string {
	var out []string
	for _, s := range c.Nodes {
		if s.NATS().Running() {
			out = append(out, s.ClientURL())
		}
	}
	return out
}

// Connect opens a client connection to urls that reconnects forever, as
// cc-connect's does, and closes it at cleanup.
func Connect(t testing.TB, urls ...string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(joinURLs(urls), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond),
		nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func joinURLs(urls []string) string {
	out := ""
	for i, u := range urls {
		if i > 0 {
			out += ","
		}
		out += u
	}
	return out
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }
