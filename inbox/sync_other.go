//go:build !linux

package inbox

// syncData makes what was written to f durable.
func syncData(f file) error { return f.Sync() }
