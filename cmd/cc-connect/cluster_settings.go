package main

import (
	"maps"
	"slices"

	"github.com/cc-connect/cc-connect/cluster"
	"github.com/cc-connect/cc-connect/cluster/embedded"
	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/config"
)

// clusterSettings returns the cluster settings of cfg, and false when cfg
// has no [cluster] table. The cluster package keeps its own type and never
// reads the config's: this is the one place that translates. Terminal
// bindings are the host's own and left out.
func clusterSettings(cfg *config.Config) (cluster.Settings, bool) {
	cl := cfg.Cluster
	if cl == nil {
		return cluster.Settings{}, false
	}
	s := cluster.Settings{
		Host: cl.Host, Members: slices.Clone(cl.Members), URLs: slices.Clone(cl.URLs), StateDir: cfg.State.Dir,
		Auth: cluster.Auth{CredsFile: cl.CredsFile, NKeySeedFile: cl.NKeySeedFile, TLSCA: cl.TLSCA, TLSCert: cl.TLSCert,
			TLSKey: cl.TLSKey},
		LeaseTTL: cl.LeaseTTL.D(), Replicas: cl.Replicas, Names: names.Names{Prefix: cl.Prefix},
		Receivers: slices.Clone(cl.Receivers), NKeys: maps.Clone(cl.EmbeddedNKeys),
	}
	if cl.Embedded {
		s.Embedded = &embedded.Options{Name: cl.Host, StoreDir: embedded.StoreDir(cfg.State.Dir), Listen: cl.EmbeddedListen,
			ClusterListen: cl.EmbeddedClusterListen, Routes: slices.Clone(cl.EmbeddedRoutes)}
	}
	for _, sc := range cfg.Schedules {
		s.Schedules = append(s.Schedules, cluster.ScheduleSpec{Name: sc.Name, Platform: sc.Platform, Channel: sc.Channel})
	}
	for _, b := range cfg.Bindings {
		if b.Host == "" {
			continue // the terminal's
		}
		s.Bindings = append(s.Bindings, cluster.BindingSpec{Binding: names.Binding{Platform: b.Platform, Channel: b.Channel},
			Host: b.Host, Standby: slices.Clone(b.Standby)})
	}
	s.ConfigHash = s.Fingerprint()
	return s, true
}
