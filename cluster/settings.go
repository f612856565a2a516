// Package cluster makes several cc-connect hosts serve one bot over NATS
// JetStream. It turns Settings (which the binary builds from the
// [cluster] table and the bindings) into a running Node: the embedded NATS
// server when there is one, the connection, the ingress stream and the
// lease bucket, the lease manager, and per binding the loop that consumes
// its events while this host holds its lease. The engine and the adapters
// meet it through small seams (ingress.Handler, the fences, the
// publisher); it imports neither, nor the config package. Without a
// [cluster] table nothing here runs.
package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/cluster/embedded"
	"github.com/cc-connect/cc-connect/cluster/kvlease"
	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/workspace"
)

// Settings are what a Node needs. The binary builds them from its config
// (cluster does not read the config file's types).
type Settings struct {
	Host     string
	Members  []string
	URLs     []string
	StateDir string
	Auth     Auth
	// Embedded is nil unless this host runs the embedded server.
	Embedded *embedded.Options
	LeaseTTL time.Duration
	Replicas int
	Names    names.Names
	Bindings []BindingSpec
	// Receivers are the members that receive from outside (the
	// platforms' inbound connections, webhooks) and so may publish events
	// for any binding; empty means every member. Another member publishes
	// only for the bindings it serves (its schedules' runs).
	Receivers []string
	// Schedules name each schedule's channel: the hosts that serve its
	// binding may write its pause.
	Schedules []ScheduleSpec
	// NKeys are the members' NKey public keys, by host. An embedded
	// server admits these users alone, each with its Permissions.
	NKeys map[string]string
	// ConfigHash fingerprints what routing depends on, so that status can
	// show hosts that read different configs.
	ConfigHash string
}

// Auth is how this host proves itself to NATS.
type Auth struct {
	CredsFile, NKeySeedFile string
	TLSCA, TLSCert, TLSKey  string
}

// BindingSpec is a binding as the cluster sees it: who owns it and who
// stands by.
type BindingSpec struct {
	Binding names.Binding
	Host    string
	Standby []string
}

// ScheduleSpec is a schedule as the cluster sees it: where it posts.
type ScheduleSpec struct {
	Name              string
	Platform, Channel string
}

// Role is this host's part for the binding: kvlease.Owner, Standby, or
// false when it does not serve it.
func (b BindingSpec) Role(host string) (kvlease.Role, int, bool) {
	if b.Host == host {
		return kvlease.Owner, 0, true
	}
	if i := slices.Index(b.Standby, host); i >= 0 {
		return kvlease.Standby, i, true
	}
	return 0, 0, false
}

// Fingerprint is what s's ConfigHash must be: a hash of what routing
// depends on, which every host publishes in its heartbeat.
func (s Settings) Fingerprint() string { return s.fingerprint() }

// fingerprint hashes the members, the prefix, every binding's owners and
// the receivers.
func (s Settings) fingerprint() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%q\n", s.Names.Prefix, s.Members)
	for _, bs := range s.Bindings {
		fmt.Fprintf(&b, "%q %q %q %q\n", bs.Binding.Platform, bs.Binding.Channel, bs.Host, bs.Standby)
	}
	if len(s.Receivers) > 0 { // who may publish what (left out when unset, as it was before)
		fmt.Fprintf(&b, "receivers %q\n", s.Receivers)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:6])
}

// Spec returns the spec of binding b.
func (s Settings) Spec(b names.Binding) (BindingSpec, bool) {
	i := slices.IndexFunc(s.Bindings, func(x BindingSpec) bool { return x.Binding == b })
	if i < 0 {
		return BindingSpec{}, false
	}
	return s.Bindings[i], true
}

// Route finds the binding of a platform channel as the engine does: an
// exact channel first, then "*". Every host routes alike because every
// host reads the same bindings.
func (s Settings) Route(platform, channel string) (names.Binding, bool) {
	var wildcard *names.Binding
	for i := range s.Bindings {
		b := &s.Bindings[i].Binding
		if b.Platform != platform {
			continue
		}
		if b.Channel == channel {
			return *b, true
		}
		if b.Channel == "*" && wildcard == nil {
			wildcard = b
		}
	}
	if wildcard != nil {
		return *wildcard, true
	}
	return names.Binding{}, false
}

// StateID returns this state dir's cluster identity, creating it on first
// use: a restart with the same one takes its own leases back at once.
func StateID(stateDir string) (string, error) {
	dir := filepath.Join(stateDir, "cluster")
	path := filepath.Join(dir, "state-id")
	if b, err := os.ReadFile(path); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id, nil
		}
	} else if !os.IsNotExist(err) {
		return "", fmt.Errorf("reading the cluster state id: %w", err)
	}
	if err := workspace.EnsurePrivateDir(dir); err != nil {
		return "", fmt.Errorf("creating the cluster state id: %w", err)
	}
	id := newID()
	if err := workspace.WriteFileAtomic(path, []byte(id+"\n")); err != nil {
		return "", fmt.Errorf("creating the cluster state id: %w", err)
	}
	return id, nil
}
