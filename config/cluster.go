package config

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Cluster is the [cluster] table: this cc-connect is one host of several
// that serve one bot together, over NATS JetStream (docs/cluster.md).
type Cluster struct {
	// Host is this cc-connect's name among the members.
	Host string `toml:"host"`
	// Members are every host's name; bindings name their host and
	// standbys among them.
	Members []string `toml:"members"`
	// URLs are the NATS servers to connect to.
	URLs []string `toml:"urls"`
	// CredsFile is a NATS credentials file (user JWT and NKey seed);
	// NKeySeedFile an NKey seed alone. At most one.
	CredsFile    string `toml:"creds_file"`
	NKeySeedFile string `toml:"nkey_seed_file"`
	// TLSCA verifies the servers (and, for an embedded node, the clients
	// and routes); TLSCert and TLSKey are this host's certificate.
	TLSCA   string `toml:"tls_ca"`
	TLSCert string `toml:"tls_cert"`
	TLSKey  string `toml:"tls_key"`
	// Embedded runs a JetStream-enabled NATS server in this cc-connect,
	// with its store under the state dir.
	Embedded bool `toml:"embedded"`
	// EmbeddedListen is host:port for the embedded server's clients; ""
	// for none (this cc-connect alone uses it, in-process).
	EmbeddedListen string `toml:"embedded_listen"`
	// EmbeddedClusterListen and EmbeddedRoutes join embedded servers of
	// several hosts into one NATS cluster.
	EmbeddedClusterListen string   `toml:"embedded_cluster_listen"`
	EmbeddedRoutes        []string `toml:"embedded_routes"`
	// EmbeddedNKeys are the NKey public keys (U…) the embedded server
	// lets in, by member: each user gets only what that member's part
	// needs (docs/cluster.md).
	EmbeddedNKeys MemberKeys `toml:"embedded_nkeys"`
	// Receivers are the members that receive from outside: open the
	// platforms' inbound connections (Slack's Socket Mode, the Telegram
	// poller, the Discord gateway) and serve webhooks. Only they may
	// publish events for bindings they do not serve. Empty: every member.
	Receivers []string `toml:"receivers"`
	// LeaseTTL is how long a lease lives without renewal: how long a dead
	// owner's bindings wait for a standby.
	LeaseTTL Duration `toml:"lease_ttl"`
	// Replicas is how many NATS nodes keep the stream and the leases.
	Replicas int `toml:"replicas"`
	// Prefix names the stream, the bucket and the subjects, so several
	// clusters can share one NATS account.
	Prefix string `toml:"prefix"`
}

// MemberKeys are NKey public keys by cluster member.
type MemberKeys map[string]string

// Receives says whether host receives from outside (cluster.receivers).
func (cl *Cluster) Receives(host string) bool {
	return cl == nil || len(cl.Receivers) == 0 || slices.Contains(cl.Receivers, host)
}

func defaultCluster() Cluster {
	return Cluster{EmbeddedListen: "127.0.0.1:4222", LeaseTTL: Duration(15 * time.Second), Replicas: 1, Prefix: "cc-connect"}
}

var (
	memberName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
	prefixName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,31}$`)
	nkeyPublic = regexp.MustCompile(`^U[A-Z2-7]{55}$`)
)

// Member reports whether host is a cluster member.
func (cl *Cluster) Member(host string) bool { return cl != nil && slices.Contains(cl.Members, host) }

// ServedElsewhere says whether b belongs to other cluster members only
// (this host is neither its host nor a standby): its workspace is theirs
// and need not exist here, so checks of it (doctor's) skip it.
func (c *Config) ServedElsewhere(b Binding) bool {
	cl := c.Cluster
	return cl != nil && b.Host != "" && b.Host != cl.Host && !slices.Contains(b.Standby, cl.Host)
}

// validateCluster checks [cluster] and every binding's host and standby.
// It runs before validateBindings resolves the workspaces, which it
// compares as written.
func validateCluster(c *Config, dir string, d *decoder) (warnings []string) {
	cl := c.Cluster
	if cl == nil {
		for i, b := range c.Bindings {
			key := fmt.Sprintf("bindings[%d]", i)
			if b.Host != "" {
				d.failf(key+".host", "is set, but there is no [cluster] table (see docs/cluster.md)")
			}
			if len(b.Standby) > 0 {
				d.failf(key+".standby", "is set, but there is no [cluster] table (see docs/cluster.md)")
			}
		}
		return nil
	}
	bad := func(key string) bool { return d.failed["cluster."+key] }
	if !bad("host") {
		switch {
		case cl.Host == "":
			d.failf("cluster.host", "is required: this host's name among cluster.members")
		case !memberName.MatchString(cl.Host):
			d.failf("cluster.host", "%q is not a host name (letters, digits, '.', '_' and '-', at most 63)", cl.Host)
		case !bad("members") && !slices.Contains(cl.Members, cl.Host):
			d.failf("cluster.host", "%q is not in cluster.members", cl.Host)
		}
	}
	if !bad("members") {
		if len(cl.Members) == 0 {
			d.failf("cluster.members", "must list every host's name (this one's too)")
		}
		for i, m := range cl.Members {
			key := fmt.Sprintf("cluster.members[%d]", i)
			if !memberName.MatchString(m) {
				d.failf(key, "%q is not a host name (letters, digits, '.', '_' and '-', at most 63)", m)
			} else if j := slices.Index(cl.Members, m); j < i {
				d.failf(key, "%q is already cluster.members[%d]", m, j)
			}
		}
	}
	for i, r := range cl.Receivers {
		key := fmt.Sprintf("cluster.receivers[%d]", i)
		switch {
		case !bad("members") && !cl.Member(r):
			d.failf(key, "%q is not in cluster.members", r)
		case slices.Index(cl.Receivers, r) < i:
			d.failf(key, "%q is listed twice", r)
		}
	}
	if !bad("urls") {
		if len(cl.URLs) == 0 && !cl.Embedded {
			d.failf("cluster.urls", `must name the NATS servers (["nats://nats-1:4222", …]), or set embedded = true`)
		}
		for i, u := range cl.URLs {
			if err := checkNATSURL(u, "nats", "tls", "ws", "wss"); err != nil {
				d.failf(fmt.Sprintf("cluster.urls[%d]", i), "%v", err)
			}
		}
	}
	warnings = append(warnings, validateClusterFiles(c, dir, d)...)
	warnings = append(warnings, validateEmbedded(c, d)...)
	if !bad("lease_ttl") && (cl.LeaseTTL < Duration(3*time.Second) || cl.LeaseTTL > Duration(10*time.Minute)) {
		d.failf("cluster.lease_ttl", "%s is out of range: between 3s and 10m (renewals go every third of it)", cl.LeaseTTL)
	}
	if !bad("replicas") && (cl.Replicas < 1 || cl.Replicas > 5) {
		d.failf("cluster.replicas", "must be 1 to 5, got %d", cl.Replicas)
	}
	if !bad("prefix") && !prefixName.MatchString(cl.Prefix) {
		d.failf("cluster.prefix", "%q is not a prefix (letters, digits and '-', at most 32)", cl.Prefix)
	}
	nodes := len(cl.URLs)
	if cl.Embedded {
		nodes = max(nodes, len(cl.EmbeddedRoutes)+1)
	}
	if cl.Replicas == 1 && nodes >= 3 {
		warnings = append(warnings, "cluster.replicas is 1: the stream and the leases live on one NATS node and are lost with it; 3 keeps them through a node's loss")
	}
	if c.Agent.User == "" && (cl.NKeySeedFile != "" || cl.CredsFile != "") {
		warnings = append(warnings, "cluster: agent.user is not set, so Claude runs as cc-connect's own user and can read this host's NATS "+
			"credential (cluster.nkey_seed_file or creds_file): with it, it could publish chat events for the bindings this host "+
			"may publish for, as any user, and hold this host's leases. Run cc-connect as root with agent.user set to a user of "+
			"its own (docs/security.md)")
	}
	validateBindingHosts(c, dir, d)
	return warnings
}

// validateClusterFiles checks the credential and TLS files.
func validateClusterFiles(c *Config, dir string, d *decoder) (warnings []string) {
	cl := c.Cluster
	if cl.CredsFile != "" && cl.NKeySeedFile != "" {
		d.failf("cluster.nkey_seed_file", "set together with cluster.creds_file: use one (a creds file holds its own seed)")
	}
	if (cl.TLSCert == "") != (cl.TLSKey == "") {
		d.failf("cluster.tls_key", "tls_cert and tls_key go together")
	}
	for _, f := range []struct {
		key    string
		path   *string
		secret bool
	}{
		{"creds_file", &cl.CredsFile, true}, {"nkey_seed_file", &cl.NKeySeedFile, true},
		{"tls_ca", &cl.TLSCA, false}, {"tls_cert", &cl.TLSCert, false}, {"tls_key", &cl.TLSKey, true},
	} {
		if *f.path == "" || d.failed["cluster."+f.key] {
			continue
		}
		p, err := resolvePath(*f.path, dir)
		if err != nil {
			d.failf("cluster."+f.key, "%v", err)
			continue
		}
		*f.path = p
		info, err := os.Stat(p)
		switch {
		case err != nil:
			d.failf("cluster."+f.key, "%v", err)
		case info.IsDir():
			d.failf("cluster."+f.key, "%s is a folder, not a file", p)
		case f.secret && info.Mode().Perm()&0o077 != 0:
			warnings = append(warnings, fmt.Sprintf("cluster.%s: %s holds a secret and others can read it (mode %04o): chmod 600",
				f.key, p, info.Mode().Perm()))
		}
	}
	if len(cl.URLs) > 0 && cl.CredsFile == "" && cl.NKeySeedFile == "" && cl.TLSCert == "" {
		warnings = append(warnings, "cluster: no credentials (creds_file, nkey_seed_file or tls_cert): whoever may publish to the NATS servers "+
			"can post events as any chat user, so they must admit only these hosts")
	}
	return warnings
}

// validateEmbedded checks the embedded server's keys.
func validateEmbedded(c *Config, d *decoder) (warnings []string) {
	cl := c.Cluster
	if !cl.Embedded {
		def := defaultCluster()
		for _, k := range []struct {
			key string
			set bool
		}{
			{"embedded_listen", cl.EmbeddedListen != def.EmbeddedListen},
			{"embedded_cluster_listen", cl.EmbeddedClusterListen != ""},
			{"embedded_routes", len(cl.EmbeddedRoutes) > 0},
			{"embedded_nkeys", len(cl.EmbeddedNKeys) > 0},
		} {
			if k.set {
				d.failf("cluster."+k.key, "is only used with embedded = true")
			}
		}
		return nil
	}
	if cl.EmbeddedListen != "" && !d.failed["cluster.embedded_listen"] {
		loop, err := checkHostPort(cl.EmbeddedListen)
		switch {
		case err != nil:
			d.failf("cluster.embedded_listen", "%v", err)
		case len(cl.EmbeddedNKeys) == 0:
			d.failf("cluster.embedded_listen", "%s admits anyone who can connect to it, and whoever publishes can post as any chat user: "+
				"list the hosts' NKeys in cluster.embedded_nkeys (`cc-connect cluster nkey` makes one), or set embedded_listen = \"\" "+
				"to serve this cc-connect alone", cl.EmbeddedListen)
		case !loop && cl.TLSCert == "":
			d.failf("cluster.embedded_listen", "%s is reachable from other hosts without TLS: chat text and every host's lease writes "+
				"would cross the network in the clear, and could be changed on the way; set cluster.tls_cert and tls_key "+
				"(and tls_ca), or listen on 127.0.0.1", cl.EmbeddedListen)
		}
	}
	members := slices.Sorted(maps.Keys(cl.EmbeddedNKeys))
	for _, m := range members {
		key := "cluster.embedded_nkeys." + m
		k := cl.EmbeddedNKeys[m]
		switch {
		case !nkeyPublic.MatchString(k):
			d.failf(key, "%q is not an NKey user public key (U followed by 55 letters and digits)", k)
		case !d.failed["cluster.members"] && !cl.Member(m):
			d.failf(key, "%q is not in cluster.members", m)
		}
		for _, o := range members {
			if o < m && cl.EmbeddedNKeys[o] == k {
				d.failf(key, "is %s's key too: each member needs its own, which gets only that member's rights", o)
			}
		}
	}
	if len(cl.EmbeddedNKeys) > 0 {
		if cl.NKeySeedFile == "" && cl.CredsFile == "" {
			d.failf("cluster.nkey_seed_file", "is required with cluster.embedded_nkeys: this host logs in to its own server too")
		}
		if _, ok := cl.EmbeddedNKeys[cl.Host]; !ok && cl.Host != "" {
			d.failf("cluster.embedded_nkeys", "has no key for this host (%q): it logs in to its own server too", cl.Host)
		}
		var keyless []string
		for _, m := range cl.Members {
			if _, ok := cl.EmbeddedNKeys[m]; !ok && m != cl.Host {
				keyless = append(keyless, m)
			}
		}
		if len(keyless) > 0 {
			warnings = append(warnings, fmt.Sprintf("cluster.embedded_nkeys has no key for %s: the embedded server does not let them in",
				strings.Join(keyless, ", ")))
		}
	}
	if cl.EmbeddedClusterListen != "" && !d.failed["cluster.embedded_cluster_listen"] {
		loop, err := checkHostPort(cl.EmbeddedClusterListen)
		switch {
		case err != nil:
			d.failf("cluster.embedded_cluster_listen", "%v", err)
		case !loop && (cl.TLSCA == "" || cl.TLSCert == ""):
			d.failf("cluster.embedded_cluster_listen", "%s is reachable from other hosts: routes are authenticated by certificate, "+
				"so set cluster.tls_ca, tls_cert and tls_key", cl.EmbeddedClusterListen)
		}
	}
	if len(cl.EmbeddedRoutes) > 0 && cl.EmbeddedClusterListen == "" {
		d.failf("cluster.embedded_routes", "needs cluster.embedded_cluster_listen (the route port of this node)")
	}
	for i, r := range cl.EmbeddedRoutes {
		if err := checkNATSURL(r, "nats-route", "nats", "tls"); err != nil {
			d.failf(fmt.Sprintf("cluster.embedded_routes[%d]", i), "%v", err)
		}
	}
	return warnings
}

// validateBindingHosts checks each binding's host and standbys.
func validateBindingHosts(c *Config, dir string, d *decoder) {
	cl := c.Cluster
	type owners struct {
		i       int
		host    string
		standby []string
	}
	byWorkspace := map[string]owners{}
	for i, b := range c.Bindings {
		key := fmt.Sprintf("bindings[%d]", i)
		if c.platformType(b.Platform) == TypeLocal {
			if b.Host != "" || len(b.Standby) > 0 {
				d.failf(key+".host", "the terminal is this host's own: leave host and standby unset on a local binding")
			}
			continue
		}
		switch {
		case d.failed[key+".host"]:
		case b.Host == "":
			d.failf(key+".host", "is required with [cluster]: the member that owns this binding's workspace")
		case !cl.Member(b.Host):
			d.failf(key+".host", "%q is not in cluster.members", b.Host)
		}
		for j, s := range b.Standby {
			skey := fmt.Sprintf("%s.standby[%d]", key, j)
			switch {
			case !cl.Member(s):
				d.failf(skey, "%q is not in cluster.members", s)
			case s == b.Host:
				d.failf(skey, "%q is the binding's host already", s)
			case slices.Index(b.Standby, s) < j:
				d.failf(skey, "%q is listed twice", s)
			}
		}
		if b.Workspace == "" {
			continue
		}
		ws, err := resolvePath(b.Workspace, dir)
		if err != nil {
			continue
		}
		if o, seen := byWorkspace[ws]; seen && (o.host != b.Host || !slices.Equal(o.standby, b.Standby)) {
			d.failf(key+".host", "bindings[%d] names the same workspace with host %q and standby %v: a workspace lives on one host, "+
				"so its bindings must agree", o.i, o.host, o.standby)
		} else if !seen {
			byWorkspace[ws] = owners{i: i, host: b.Host, standby: b.Standby}
		}
	}
}

// checkNATSURL checks a server URL without printing its credentials.
func checkNATSURL(raw string, schemes ...string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || !slices.Contains(schemes, u.Scheme) {
		return fmt.Errorf("%q is not a URL such as %s://host:port", redactURL(raw), schemes[0])
	}
	return nil
}

// checkHostPort checks a listen address and says whether it is loopback.
func checkHostPort(hp string) (loopback bool, err error) {
	host, port, err := net.SplitHostPort(hp)
	if err != nil || port == "" {
		return false, fmt.Errorf("%q is not host:port", hp)
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// render writes [cluster] as TOML for Config.String.
func (cl *Cluster) render() string {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	list := func(xs []string) string {
		parts := make([]string, len(xs))
		for i, x := range xs {
			parts[i] = q(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	urls := make([]string, len(cl.URLs))
	for i, u := range cl.URLs {
		urls[i] = redactURL(u)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n[cluster]\nhost = %s\nmembers = %s\nurls = %s\n", q(cl.Host), list(cl.Members), list(urls))
	for _, kv := range [][2]string{{"creds_file", cl.CredsFile}, {"nkey_seed_file", cl.NKeySeedFile},
		{"tls_ca", cl.TLSCA}, {"tls_cert", cl.TLSCert}, {"tls_key", cl.TLSKey}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, "%s = %s\n", kv[0], q(kv[1]))
		}
	}
	if len(cl.Receivers) > 0 {
		fmt.Fprintf(&b, "receivers = %s\n", list(cl.Receivers))
	}
	if cl.Embedded {
		var keys []string
		for _, m := range slices.Sorted(maps.Keys(cl.EmbeddedNKeys)) {
			keys = append(keys, fmt.Sprintf("%q = %q", m, cl.EmbeddedNKeys[m]))
		}
		fmt.Fprintf(&b, "embedded = true\nembedded_listen = %s\nembedded_cluster_listen = %s\nembedded_routes = %s\nembedded_nkeys = { %s }\n",
			q(cl.EmbeddedListen), q(cl.EmbeddedClusterListen), list(cl.EmbeddedRoutes), strings.Join(keys, ", "))
	}
	fmt.Fprintf(&b, "lease_ttl = %s\nreplicas = %d\nprefix = %s\n", q(cl.LeaseTTL.String()), cl.Replicas, q(cl.Prefix))
	return b.String()
}
