package agentproc

import "syscall"

// dieWithParent has the kernel SIGKILL the agent when the cc-connect that
// started it dies, even by SIGKILL. Otherwise the CLI would read EOF and
// go on with its turn (tools included) unobserved, racing the next
// cc-connect for the session and its transcript. The signal follows the
// OS thread that started the process; Go only ends threads whose
// goroutine exits while locked to them, which agentproc never does.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
