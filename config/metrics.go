package config

import "net"

// validateMetrics checks [metrics]. A non-loopback address is refused
// unless allow_remote says the admin means it: the metrics name platform
// instances and show when people work, which is nobody else's business.
// (The metrics package refuses it again when listening; this names the key.)
func validateMetrics(c *Config, d *decoder) {
	m := c.Metrics
	if d.failed["metrics.addr"] || m.Addr == "" {
		return
	}
	host, port, err := net.SplitHostPort(m.Addr)
	if err != nil || port == "" {
		d.failf("metrics.addr", "%q is not host:port (e.g. \"127.0.0.1:9464\")", m.Addr)
		return
	}
	if m.AllowRemote || host == "localhost" {
		return
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		d.failf("metrics.addr", "%q can be reached from other hosts; use 127.0.0.1:%s, or set metrics.allow_remote = true if a firewall or proxy protects it", m.Addr, port)
	}
}
