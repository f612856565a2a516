package cluster

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/cc-connect/cc-connect/cluster/names"
)

// What each host's NATS user may do. A host's NKey seed (or creds file)
// is all a NATS server knows of it; without limits, whoever holds one
// seed could publish a chat message as any user for any binding, take
// another host's leases, or delete the stream. So each host's user gets
// only what its part in the config needs:
//
//   - publish events for the bindings it may publish for (all of them on
//     a receiver, only those it serves elsewhere), on subjects that end
//     in its own name (names.Publish), so that the owner knows who sent
//     each event;
//   - for each binding it serves: its durable consumer (create with the
//     binding's filter, pull, acknowledge), its lease key and the records
//     of the messages answered and of where its conversations are served
//     (answered.go);
//   - its own heartbeat key; on a receiver the poller and shard leases
//     and the pollers' offsets; the pause keys of the schedules of the
//     bindings it serves;
//   - read the stream's and the bucket's state (status, keys, whether an
//     event was settled) and subscribe to its own replies alone.
//
// Nothing else: no host may create, change, purge or delete the stream or
// the bucket (Setup's user, or `cc-connect cluster init`, does that), nor
// read another host's replies.

// Permissions are what one NATS user may publish and subscribe to
// (subjects, with NATS wildcards).
type Permissions struct {
	Publish   []string
	Subscribe []string
}

// Receives says whether host receives from outside (Settings.Receivers).
func (s Settings) Receives(host string) bool {
	return len(s.Receivers) == 0 || slices.Contains(s.Receivers, host)
}

// Serves says whether host owns or stands by for binding b.
func (s Settings) Serves(host string, b names.Binding) bool {
	spec, ok := s.Spec(b)
	if !ok {
		return false
	}
	_, _, ok = spec.Role(host)
	return ok
}

// MayPublish says whether host may publish events for binding b: a
// receiver for any binding, another host for those it serves.
func (s Settings) MayPublish(host string, b names.Binding) bool {
	if _, ok := s.Spec(b); !ok {
		return false
	}
	return s.Receives(host) || s.Serves(host, b)
}

// Permissions are the rights of host's NATS user under s.
func (s Settings) Permissions(host string) Permissions {
	n := s.Names
	stream, kv := n.Stream(), n.KVStream()
	pub := []string{
		"$JS.API.INFO",
		"$JS.API.STREAM.INFO." + stream,
		"$JS.API.CONSUMER.INFO." + stream + ".*", // status: each binding's waiting and in-hand events
		"$JS.API.STREAM.INFO." + kv,
		"$JS.API.STREAM.INFO." + n.ContextStream(),
		"$JS.API.DIRECT.GET." + kv + ".>", // reading a key
		// Watching and listing keys: an ordered consumer of a name the
		// client picks, filtered by key, deleted when done.
		"$JS.API.CONSUMER.CREATE." + kv + ".*",
		"$JS.API.CONSUMER.CREATE." + kv + ".*.>",
		"$JS.API.CONSUMER.DELETE." + kv + ".*",
		"$JS.FC." + kv + ".>",
		n.KVKey(names.Member(host)),
		n.KVKey(names.Drain(host)), // cluster drain, run with this host's credential
	}
	served := false
	for _, b := range s.Bindings {
		if s.MayPublish(host, b.Binding) {
			pub = append(pub, n.Publish(b.Binding, host))
		}
		if !s.Serves(host, b.Binding) {
			continue
		}
		served = true
		c := n.Consumer(b.Binding)
		pub = append(pub,
			"$JS.API.CONSUMER.CREATE."+stream+"."+c+"."+n.BindingFilter(b.Binding),
			"$JS.API.CONSUMER.MSG.NEXT."+stream+"."+c,
			"$JS.ACK."+stream+"."+c+".>",
			n.KVKey(names.BindingLease(b.Binding)),
			n.KVKey(names.AnsweredPrefix+b.Binding.Token()+".*"),
			n.KVKey(names.ServedPrefix+b.Binding.Token()+".*"),
			// Its conversations' context (context.go): written by the
			// holder, read by the host that takes the binding over.
			n.ContextKVKey(names.ContextOf(b.Binding)),
			"$JS.API.DIRECT.GET."+n.ContextStream()+"."+n.ContextKVKey(names.ContextOf(b.Binding)),
			// The replies its conversations' hosts settled and were
			// posting (replies.go), listed by the host that takes the
			// binding: a consumer filtered to them alone.
			"$JS.API.CONSUMER.CREATE."+n.ContextStream()+".*."+n.ContextKVKey(names.ContextReplies(b.Binding)),
			"$JS.API.CONSUMER.DELETE."+n.ContextStream()+".*",
			"$JS.FC."+n.ContextStream()+".>")
	}
	if served {
		// Whether a parked event is still in the stream (Node.InStream).
		pub = append(pub, "$JS.API.STREAM.MSG.GET."+stream)
	}
	if s.Receives(host) {
		pub = append(pub, n.KVKey(names.LeasePrefix+"poller.*"), n.KVKey(names.LeasePrefix+"shard.*.*"), n.KVKey("offset.*"))
	}
	for _, sc := range s.Schedules {
		if b, ok := s.Route(sc.Platform, sc.Channel); ok && s.Serves(host, b) {
			pub = append(pub, n.KVKey(names.SchedulePause(sc.Name)))
		}
	}
	return Permissions{Publish: dedupe(pub), Subscribe: []string{names.Inbox(host) + ".>"}}
}

// AdminInbox is the reply prefix of the user that creates the stream and
// the bucket (SetupPermissions).
const AdminInbox = "_INBOX_cc-connect-admin"

// SetupPermissions are the rights of the user that creates and updates
// the stream and the bucket, which no host's user may do: the embedded
// server's own setup user, or the admin credential `cc-connect cluster
// init` is given. It may not delete or purge them either.
func (s Settings) SetupPermissions() Permissions {
	n := s.Names
	pub := []string{"$JS.API.INFO"}
	for _, st := range []string{n.Stream(), n.KVStream(), n.ContextStream()} {
		pub = append(pub, "$JS.API.STREAM.INFO."+st, "$JS.API.STREAM.CREATE."+st, "$JS.API.STREAM.UPDATE."+st)
	}
	return Permissions{Publish: pub, Subscribe: []string{AdminInbox + ".>"}}
}

func dedupe(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// Conf is p as a value of a NATS server config file.
func (p Permissions) Conf() string {
	list := func(xs []string) string {
		var b strings.Builder
		b.WriteString("[\n")
		for _, x := range xs {
			fmt.Fprintf(&b, "    %q\n", x)
		}
		b.WriteString("  ]")
		return b.String()
	}
	return fmt.Sprintf("{\n  publish: { allow: %s }\n  subscribe: { allow: %s }\n}", list(p.Publish), list(p.Subscribe))
}

var notVarChar = regexp.MustCompile(`[^A-Za-z0-9]+`)

// ServerConfig is the part of a NATS server config that gives each
// member's user its Permissions (and the admin's, for `cluster init`),
// for a NATS server that cc-connect does not run: the output of `cc-connect
// cluster permissions`. A member whose key s.NKeys does not hold, and the
// admin when adminKey is "", get a placeholder to fill in.
func (s Settings) ServerConfig(adminKey string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# What each cc-connect host's NATS user may do (cluster prefix %q), as `cc-connect cluster permissions`\n", s.Names.Prefix)
	b.WriteString("# prints it from the config. Print and load it again when the members, cluster.receivers, the bindings\n")
	b.WriteString("# or the schedules change.\n")
	vars := map[string]string{}
	used := map[string]bool{}
	hosts := slices.Clone(s.Members)
	sort.Strings(hosts)
	for _, h := range hosts {
		v := "CC_CONNECT_" + strings.ToUpper(strings.Trim(notVarChar.ReplaceAllString(h, "_"), "_"))
		for base, i := v, 2; used[v]; i++ {
			v = fmt.Sprintf("%s_%d", base, i)
		}
		used[v], vars[h] = true, v
		fmt.Fprintf(&b, "%s = %s\n", v, s.Permissions(h).Conf())
	}
	fmt.Fprintf(&b, "# The admin that runs `cc-connect cluster init` (creates and updates the stream and the bucket).\n")
	fmt.Fprintf(&b, "CC_CONNECT_ADMIN = %s\n", s.SetupPermissions().Conf())
	b.WriteString("authorization {\n  users: [\n")
	for _, h := range hosts {
		key := s.NKeys[h]
		if key == "" {
			key = "U…" + h // `cc-connect cluster nkey --public <its seed file>` prints it
		}
		fmt.Fprintf(&b, "    { nkey: %q, permissions: $%s }  # %s\n", key, vars[h], h)
	}
	if adminKey == "" {
		adminKey = "U…admin" // `cc-connect cluster nkey --public <the admin's seed file>`
	}
	fmt.Fprintf(&b, "    { nkey: %q, permissions: $CC_CONNECT_ADMIN }  # the admin: cc-connect cluster init\n", adminKey)
	b.WriteString("  ]\n}\n")
	return b.String()
}
