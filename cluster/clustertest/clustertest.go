// Package clustertest gives the tests of other packages (the engine, the
// binary) the real NATS JetStream servers the cluster's own tests use: one
// embedded node, a cluster of them routed on 127.0.0.1, and a TCP proxy
// that cuts a client off as a partition would. Only tests import it.
package clustertest

import (
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/cc-connect/cc-connect/cluster/embedded"
	"github.com/cc-connect/cc-connect/cluster/internal/natstest"
)

// Cluster is n routed JetStream nodes (natstest.Cluster).
type Cluster = natstest.Cluster

// Proxy forwards TCP to a NATS server until cut (natstest.Proxy).
type Proxy = natstest.Proxy

// Single starts one JetStream node, stopped at cleanup.
func Single(t testing.TB) *embedded.Server { return natstest.Single(t) }

// StartCluster starts n routed JetStream nodes, stopped at cleanup.
func StartCluster(t testing.TB, n int) *Cluster { return natstest.StartCluster(t, n) }

// NewProxy forwards connections to target until Cut.
func NewProxy(t testing.TB, target string) *Proxy { return natstest.NewProxy(t, target) }

// Connect opens a client connection that reconnects forever.
func Connect(t testing.TB, urls ...string) *nats.Conn { return natstest.Connect(t, urls...) }
