package doctor

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/config"
)

// checkClusterSeed warns when the agent's user can read this host's NATS
// credential (cluster.nkey_seed_file, creds_file, the TLS key). With it,
// whoever drives Claude could publish chat events for the bindings this
// host may publish for, as any chat user, and take this host's leases: the
// NATS server holds the credential to this host's part, not to less. Nil
// without a [cluster] table or a credential file.
func checkClusterSeed(ctx context.Context, cfg *config.Config, agent agentproc.Config, env []string) *Check {
	cl := cfg.Cluster
	if cl == nil {
		return nil
	}
	files := map[string]string{}
	for _, f := range []struct{ key, path string }{
		{"cluster.nkey_seed_file", cl.NKeySeedFile}, {"cluster.creds_file", cl.CredsFile}, {"cluster.tls_key", cl.TLSKey},
	} {
		if f.path != "" {
			files[f.key] = f.path
		}
	}
	if len(files) == 0 {
		return nil
	}
	c := &Check{Name: "cluster credential", Status: OK}
	const power = "with it, whoever drives Claude could publish chat events as any user for the bindings this host may publish for, " +
		"and take its leases"
	if agentproc.Credential(agent) == nil {
		var keys []string
		for _, k := range []string{"cluster.nkey_seed_file", "cluster.creds_file", "cluster.tls_key"} {
			if p, ok := files[k]; ok {
				keys = append(keys, fmt.Sprintf("%s (%s)", k, p))
			}
		}
		c.Status = Warn
		c.Detail = fmt.Sprintf("the agent runs as cc-connect's own user (uid %d) and can read %s: %s. Run cc-connect as root with "+
			"agent.user set to a user of its own (docs/security.md)", os.Geteuid(), strings.Join(keys, ", "), power)
		return c
	}
	if err := agentproc.CheckSwitch(agent.User); err != nil {
		c.Status, c.Detail = Warn, "not checked: doctor cannot act as agent.user without root"
		return c
	}
	var readable []string
	for _, k := range []string{"cluster.nkey_seed_file", "cluster.creds_file", "cluster.tls_key"} {
		p, ok := files[k]
		if !ok {
			continue
		}
		ok, err := accessAs(ctx, agent, env, p, "r")
		switch {
		case err != nil:
			readable = append(readable, err.Error())
		case ok:
			readable = append(readable, fmt.Sprintf("%s (%s)", k, p))
		}
	}
	if len(readable) > 0 {
		c.Status = Warn
		c.Detail = fmt.Sprintf("%s can read %s: %s. chmod 600 it, owned by cc-connect's user", agent.User, strings.Join(readable, ", "), power)
		return c
	}
	c.Detail = fmt.Sprintf("%s cannot read this host's NATS credential", agent.User)
	return c
}
