package supervise

import "syscall"

// sysProcAttr puts the child in its own process group, so a terminal's
// Ctrl-C reaches only the parent, which stops its children in order, and
// has the kernel kill the child when its parent dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
