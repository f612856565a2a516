package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cc-connect/cc-connect/cluster/kvlease"
	"github.com/cc-connect/cc-connect/cluster/names"
)

// Report is the cluster as `cc-connect cluster status` and !status show
// it: every member's health, every binding's owner, standbys and holder,
// and the other leases. Ages are on the NATS server's clock.
type Report struct {
	// Reader is the host that read it; At the server's time of reading.
	Reader   string          `json:"reader"`
	At       time.Time       `json:"at"`
	LeaseTTL time.Duration   `json:"lease_ttl"`
	Hosts    []HostStatus    `json:"hosts"`
	Bindings []BindingStatus `json:"bindings"`
	Leases   []LeaseStatus   `json:"other_leases,omitempty"`
	// Conversations are the latest answered ones, newest first (at most
	// maxConversations).
	Conversations []ConversationStatus `json:"conversations,omitempty"`
}

// ConversationStatus is where one conversation is served: the holder of
// its binding's lease runs its next message; its context (Claude's session
// and transcript) is on the host that last answered in it and, when
// Replicated, in the context bucket too (context.go); Context says why not
// otherwise.
type ConversationStatus struct {
	Binding      string    `json:"binding"`
	Channel      string    `json:"channel"`
	Thread       string    `json:"thread,omitempty"`
	ServedBy     string    `json:"served_by"` // the binding's holder now; "" when none
	LastAnswered string    `json:"last_answered_on"`
	At           time.Time `json:"last_answer_at"` // that host's clock
	Replicated   bool      `json:"context_replicated"`
	Context      string    `json:"context,omitempty"` // "yes", "no (why)"
}

// maxConversations bounds the conversations a report lists.
const maxConversations = 100

// HostStatus is one host's health, from its heartbeat record.
type HostStatus struct {
	Name string `json:"name"`
	// Member: in this config's cluster.members (a host that is not but
	// writes heartbeats reads another config).
	Member bool `json:"member"`
	// Seen: it has written a heartbeat. Up: within one lease TTL.
	Seen         bool          `json:"seen"`
	Up           bool          `json:"up"`
	HeartbeatAge time.Duration `json:"heartbeat_age,omitempty"`
	Version      string        `json:"version,omitempty"`
	Started      time.Time     `json:"started,omitzero"`
	ConfigHash   string        `json:"config_hash,omitempty"`
	SameConfig   bool          `json:"same_config"`
	Holds        int           `json:"holds"`
	// Draining: a drain of this host (`cluster drain`) was asked for
	// after its run started (DrainAsked, the server's clock): it hands its
	// bindings over and serves none until it restarts.
	Draining   bool      `json:"draining"`
	DrainAsked time.Time `json:"drain_asked,omitzero"`
}

// BindingStatus is one binding's ownership.
type BindingStatus struct {
	Binding string   `json:"binding"`
	Owner   string   `json:"owner"`
	Standby []string `json:"standby,omitempty"`
	LeaseStatus
	// Waiting are events not yet delivered; InHand delivered to the
	// holder and not finished (journaled or queued).
	Waiting uint64 `json:"waiting"`
	InHand  int    `json:"in_hand"`
}

// LeaseStatus is one lease.
type LeaseStatus struct {
	Key string `json:"key,omitempty"`
	// Holder is "" when nobody holds it (never taken, or released).
	Holder string `json:"holder"`
	// Age is how long since the holder last renewed it.
	Age      time.Duration `json:"age,omitempty"`
	Expired  bool          `json:"expired"`
	Revision uint64        `json:"revision,omitempty"`
	Token    uint64        `json:"token,omitempty"`
	Acquired time.Time     `json:"acquired,omitzero"` // the holder's clock
}

// Status reads the report through this node's connection.
func (n *Node) Status(ctx context.Context) (Report, error) {
	return buildReport(ctx, n.js, n.kv, n.s)
}

// ReadStatus connects with s (never starting an embedded server: it asks
// the one this host runs, when it listens) and reads the report. It works
// from any host.
func ReadStatus(ctx context.Context, s Settings, log *slog.Logger) (Report, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if s.Embedded != nil {
		if s.Embedded.Listen == "" && len(s.URLs) == 0 {
			return Report{}, errors.New("this host's embedded NATS server listens nowhere (cluster.embedded_listen = \"\"), " +
				"so nothing else can read it: ask another host, or give it a listen address")
		}
		if s.Embedded.Listen != "" {
			s.URLs = append([]string{"nats://" + dialable(s.Embedded.Listen)}, s.URLs...)
		}
	}
	opts, closed, err := natsOptions(s, log, nil)
	if err != nil {
		return Report{}, err
	}
	opts = append(opts, nats.MaxReconnects(0), nats.Name("cc-connect cluster status"))
	nc, err := nats.Connect(strings.Join(s.URLs, ","), opts...)
	if err != nil {
		return Report{}, fmt.Errorf("connecting to NATS: %w", err)
	}
	defer closeConn(nc, closed)
	js, err := jetstream.New(nc)
	if err != nil {
		return Report{}, err
	}
	kv, err := js.KeyValue(ctx, s.Names.Bucket())
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return Report{}, fmt.Errorf("no cluster bucket %q yet: no host of this cluster has started", s.Names.Bucket())
	}
	if err != nil {
		return Report{}, fmt.Errorf("opening the cluster bucket: %w", err)
	}
	return buildReport(ctx, js, kv, s)
}

// dialable turns a listen address into one to dial.
func dialable(listen string) string {
	for _, wild := range []string{"0.0.0.0:", "[::]:", ":"} {
		if strings.HasPrefix(listen, wild) {
			return "127.0.0.1:" + strings.TrimPrefix(listen, wild)
		}
	}
	return listen
}

func buildReport(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, s Settings) (Report, error) {
	snap, err := kvlease.ReadSnapshot(ctx, js, kv)
	if err != nil {
		return Report{}, err
	}
	r := Report{Reader: s.Host, At: snap.At, LeaseTTL: s.LeaseTTL}
	leases := map[string]kvlease.LeaseRecord{}
	holds := map[string]int{}
	for _, l := range snap.Leases {
		leases[l.Key] = l
		if !l.Expired() {
			holds[l.Value.Holder]++
		}
	}
	seen := map[string]kvlease.MemberRecord{}
	for _, m := range snap.Members {
		seen[m.Member.Host] = m
	}
	hostNames := append([]string(nil), s.Members...)
	for _, m := range snap.Members {
		if !s.memberOf(m.Member.Host) {
			hostNames = append(hostNames, m.Member.Host)
		}
	}
	for _, h := range hostNames {
		hs := HostStatus{Name: h, Member: s.memberOf(h), Holds: holds[h]}
		if m, ok := seen[h]; ok {
			hs.Seen, hs.Up, hs.HeartbeatAge = true, m.Up(), m.Age
			hs.Version, hs.Started, hs.ConfigHash = m.Member.Version, m.Member.Started, m.Member.ConfigHash
			hs.SameConfig = m.Member.ConfigHash == s.ConfigHash
			hs.Draining, hs.DrainAsked = draining(ctx, kv, m)
		}
		r.Hosts = append(r.Hosts, hs)
	}
	var cons jetstream.Stream
	if st, err := js.Stream(ctx, s.Names.Stream()); err == nil {
		cons = st
	}
	used := map[string]bool{}
	for _, b := range s.Bindings {
		key := names.BindingLease(b.Binding)
		used[key] = true
		bs := BindingStatus{Binding: b.Binding.String(), Owner: b.Host, Standby: b.Standby, LeaseStatus: leaseStatus(leases[key])}
		if cons != nil {
			if c, err := cons.Consumer(ctx, s.Names.Consumer(b.Binding)); err == nil {
				if info, err := c.Info(ctx); err == nil {
					bs.Waiting, bs.InHand = info.NumPending, info.NumAckPending
				}
			}
		}
		r.Bindings = append(r.Bindings, bs)
	}
	convs, err := conversations(ctx, kv, s, r.Bindings)
	if err != nil {
		return Report{}, err
	}
	r.Conversations = convs
	for _, l := range snap.Leases {
		if !used[l.Key] {
			ls := leaseStatus(l)
			ls.Key = strings.TrimPrefix(l.Key, names.LeasePrefix)
			r.Leases = append(r.Leases, ls)
		}
	}
	return r, nil
}

// conversations reads the conversations' records (answered.go), newest
// first, with the holder of each one's binding from bs.
func conversations(ctx context.Context, kv jetstream.KeyValue, s Settings, bs []BindingStatus) ([]ConversationStatus, error) {
	holder := map[string]string{}
	for _, b := range bs {
		if !b.Expired {
			holder[b.Binding] = b.Holder
		}
	}
	w, err := kv.WatchFiltered(ctx, []string{names.ServedPrefix + ">"}, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("reading the conversations' records: %w", err)
	}
	defer func() { _ = w.Stop() }()
	var out []ConversationStatus
	for {
		var e jetstream.KeyValueEntry
		select {
		case e = <-w.Updates():
		case <-ctx.Done():
			return nil, fmt.Errorf("reading the conversations' records: %w", ctx.Err())
		}
		if e == nil {
			break // the current values are all read
		}
		rest := strings.TrimPrefix(e.Key(), names.ServedPrefix)
		btok, ctok, ok := strings.Cut(rest, ".")
		b, err1 := names.ParseBinding(btok)
		chTok, thTok, ok2 := strings.Cut(ctok, "_")
		ch, err2 := names.Unescape(chTok)
		th, err3 := names.Unescape(thTok)
		var rec Served
		if !ok || !ok2 || errors.Join(err1, err2, err3, json.Unmarshal(e.Value(), &rec)) != nil {
			continue // not one this build writes
		}
		out = append(out, ConversationStatus{Binding: b.String(), Channel: ch, Thread: th, ServedBy: holder[b.String()],
			LastAnswered: rec.Host, At: rec.At, Replicated: rec.Context == "yes", Context: cmp.Or(rec.Context, "no (not replicated yet)")})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].At.After(out[j].At) })
	if len(out) > maxConversations {
		out = out[:maxConversations]
	}
	return out, nil
}

// draining reads m's host's drain key: a drain asked for after its run
// started (the host watches for drains from its start on; an older one
// was served by a run before). The run's start is on the host's clock,
// the key's write on the server's: the heartbeat, written on both at
// once, puts the start on the server's clock.
func draining(ctx context.Context, kv jetstream.KeyValue, m kvlease.MemberRecord) (bool, time.Time) {
	e, err := kv.Get(ctx, names.Drain(m.Member.Host))
	if err != nil {
		return false, time.Time{} // none asked (or unreadable: status shows no drain)
	}
	started := m.Member.Started.Add(m.Written.Sub(m.Member.Heartbeat))
	return e.Created().After(started), e.Created()
}

func (s Settings) memberOf(h string) bool {
	for _, m := range s.Members {
		if m == h {
			return true
		}
	}
	return false
}

func leaseStatus(l kvlease.LeaseRecord) LeaseStatus {
	if l.Key == "" {
		return LeaseStatus{Expired: true} // never taken
	}
	return LeaseStatus{Holder: l.Value.Holder, Age: l.Age, Expired: l.Expired(), Revision: l.Revision, Token: l.Token(),
		Acquired: l.Value.Acquired}
}

// Text renders the report for a terminal or a chat.
func (r Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Cluster read by %s at %s (lease TTL %s)\n\nHosts:\n", r.Reader, r.At.UTC().Format(time.RFC3339), r.LeaseTTL)
	w := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	for _, h := range r.Hosts {
		state := "never seen"
		switch {
		case h.Up:
			state = "up, heartbeat " + ago(h.HeartbeatAge)
		case h.Seen:
			state = "DOWN, last heartbeat " + ago(h.HeartbeatAge)
		}
		extra := ""
		if h.Seen {
			extra = fmt.Sprintf("version %s, holds %d", orDash(h.Version), h.Holds)
			if !h.SameConfig {
				extra += ", READS ANOTHER CONFIG"
			}
		}
		if h.Draining {
			extra += ", DRAINED (serves nothing until it restarts)"
		}
		if !h.Member {
			extra += ", not in cluster.members"
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\n", h.Name, state, extra)
	}
	w.Flush()
	b.WriteString("\nBindings:\n")
	w = tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	for _, bs := range r.Bindings {
		standby := "none"
		if len(bs.Standby) > 0 {
			standby = strings.Join(bs.Standby, ", ")
		}
		fmt.Fprintf(w, "  %s\towner %s\tstandby %s\t%s\t%d waiting, %d in hand\n", bs.Binding, bs.Owner, standby,
			bs.LeaseStatus.describe(), bs.Waiting, bs.InHand)
	}
	w.Flush()
	if len(r.Conversations) > 0 {
		b.WriteString("\nConversations (the latest answered):\n")
		w = tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
		for _, c := range r.Conversations {
			where := c.Channel
			if c.Thread != "" {
				where += " thread " + c.Thread
			}
			fmt.Fprintf(w, "  %s\t%s\tserved by %s\tlast answered on %s %s\tcontext replicated: %s\n", c.Binding, where,
				orDash(c.ServedBy), c.LastAnswered, ago(r.At.Sub(c.At)), cmp.Or(c.Context, "no"))
		}
		w.Flush()
	}
	if len(r.Leases) > 0 {
		b.WriteString("\nOther leases:\n")
		w = tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
		for _, l := range r.Leases {
			fmt.Fprintf(w, "  %s\t%s\n", l.Key, l.describe())
		}
		w.Flush()
	}
	return b.String()
}

func (l LeaseStatus) describe() string {
	switch {
	case l.Holder == "" && l.Revision == 0:
		return "never held"
	case l.Holder == "":
		return "released, free"
	case l.Expired:
		return fmt.Sprintf("EXPIRED: held by %s, not renewed for %s (token %d)", l.Holder, l.Age.Round(time.Second), l.Token)
	}
	return fmt.Sprintf("held by %s, renewed %s (token %d)", l.Holder, ago(l.Age), l.Token)
}

func ago(d time.Duration) string {
	if d < time.Second {
		return "just now"
	}
	return d.Round(time.Second).String() + " ago"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
