//go:build !linux

package launch

import "syscall"

// dieWithParent: without a parent-death signal, an agent orphaned by a
// killed cc-connect is found and killed by the next one (engine).
func dieWithParent(*syscall.SysProcAttr) {}
