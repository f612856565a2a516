package config

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"
)

// Console configures the console in the browser ([console]); off unless
// Enabled. Its pages show what conversations do and let approvers answer
// prompts, so who can reach it matters: only loopback unless TLS is on or
// the admin says a reverse proxy in front of it does TLS.
type Console struct {
	Enabled bool `toml:"enabled"`
	// Listen is host:port the console serves on.
	Listen string `toml:"listen"`
	// URL is the address people open, the start of the sign-in links sent
	// by direct message; "" is http(s)://Listen. Required behind a proxy.
	URL string `toml:"url"`
	// TLSCert and TLSKey serve HTTPS directly (both or neither).
	TLSCert string `toml:"tls_cert"`
	TLSKey  string `toml:"tls_key"`
	// BehindProxy says a reverse proxy terminates TLS in front of the
	// console; TrustedProxies are its addresses (IPs or CIDRs): requests
	// from anywhere else are refused.
	BehindProxy    bool     `toml:"behind_proxy"`
	TrustedProxies []string `toml:"trusted_proxies"`
	// SessionTTL is how long a browser stays signed in.
	SessionTTL Duration `toml:"session_ttl"`
}

// DefaultConsoleListen is [console] listen's default.
const DefaultConsoleListen = "127.0.0.1:8474"

// maxSessionTTL bounds console.session_ttl: a stolen cookie should not
// outlive a working week.
const maxSessionTTL = 7 * 24 * time.Hour

func defaultConsole() Console {
	return Console{Listen: DefaultConsoleListen, SessionTTL: Duration(12 * time.Hour)}
}

// BaseURL is the address sign-in links start with.
func (c Console) BaseURL() string {
	if c.URL != "" {
		return strings.TrimRight(c.URL, "/")
	}
	scheme := "http"
	if c.TLSCert != "" {
		scheme = "https"
	}
	return scheme + "://" + c.Listen
}

// validateConsole checks [console]; nothing when it is off.
func validateConsole(c *Config, dir string, d *decoder) {
	cs := &c.Console
	bad := func(key string) bool { return d.failed["console."+key] }
	if !cs.Enabled {
		return
	}
	loopback := false
	if !bad("listen") {
		host, port, err := net.SplitHostPort(cs.Listen)
		if err != nil || port == "" {
			d.failf("console.listen", "%q is not host:port (e.g. %q)", cs.Listen, DefaultConsoleListen)
		} else {
			ip := net.ParseIP(host)
			loopback = host == "localhost" || (ip != nil && ip.IsLoopback())
		}
	}
	if (cs.TLSCert == "") != (cs.TLSKey == "") {
		d.failf("console.tls_cert", "tls_cert and tls_key go together: set both, or neither")
	}
	for _, f := range []struct {
		key  string
		path *string
	}{{"tls_cert", &cs.TLSCert}, {"tls_key", &cs.TLSKey}} {
		if *f.path == "" || bad(f.key) {
			continue
		}
		p, err := resolvePath(*f.path, dir)
		if err == nil {
			_, err = os.Stat(p)
		}
		if err != nil {
			d.failf("console."+f.key, "%v", err)
			continue
		}
		*f.path = p
	}
	if cs.BehindProxy {
		if len(cs.TrustedProxies) == 0 {
			d.failf("console.trusted_proxies", "behind_proxy = true needs the proxy's addresses (e.g. [\"127.0.0.1\"]): requests from anywhere else are refused")
		}
		if cs.URL == "" {
			d.failf("console.url", "behind_proxy = true needs the address people open (e.g. \"https://cc.example.com\"): the sign-in links start with it")
		}
	}
	for i, p := range cs.TrustedProxies {
		if _, err := ParseProxy(p); err != nil {
			d.failf(fmt.Sprintf("console.trusted_proxies[%d]", i), "%q is not an IP address or a CIDR", p)
		}
	}
	if !loopback && !bad("listen") && cs.TLSCert == "" && !cs.BehindProxy {
		d.failf("console.listen", "%q can be reached from other hosts: set tls_cert and tls_key, or behind_proxy = true with trusted_proxies, or listen on 127.0.0.1", cs.Listen)
	}
	if cs.URL != "" && !bad("url") {
		u, err := url.Parse(cs.URL)
		switch {
		case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
			d.failf("console.url", "%q is not an http(s) address (e.g. \"https://cc.example.com\")", cs.URL)
		case u.Scheme == "http" && (cs.BehindProxy || !loopback):
			d.failf("console.url", "%q must be https: the console's cookies are sent over TLS only", cs.URL)
		}
	}
	if !bad("session_ttl") && (cs.SessionTTL <= 0 || cs.SessionTTL.D() > maxSessionTTL) {
		d.failf("console.session_ttl", "must be between 1s and %s, got %s", maxSessionTTL, cs.SessionTTL)
	}
}

// ParseProxy reads a trusted proxy: an IP address or a CIDR.
func ParseProxy(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

// write renders [console] for Config.String; nothing when it is off.
func (c Console) write(w io.Writer) {
	if !c.Enabled {
		return
	}
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	list := func(xs []string) string {
		qs := make([]string, len(xs))
		for i, x := range xs {
			qs[i] = q(x)
		}
		return "[" + strings.Join(qs, ", ") + "]"
	}
	fmt.Fprintf(w, "\n[console]\nenabled = true\nlisten = %s\nurl = %s\nsession_ttl = %s\n", q(c.Listen), q(redactURL(c.URL)), q(c.SessionTTL.String()))
	if c.TLSCert != "" {
		fmt.Fprintf(w, "tls_cert = %s\ntls_key = %s\n", q(c.TLSCert), q(c.TLSKey))
	}
	if c.BehindProxy {
		fmt.Fprintf(w, "behind_proxy = true\ntrusted_proxies = %s\n", list(c.TrustedProxies))
	}
}
