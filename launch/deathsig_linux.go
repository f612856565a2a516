package launch

import "syscall"

// dieWithParent has the kernel SIGKILL the child when the cc-connect that
// started it dies, even by SIGKILL. The signal follows the OS thread that
// started the process; Go only ends threads whose goroutine exits while
// locked to them, which cc-connect never does.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
