//go:build unix && !linux

package supervise

import "syscall"

// sysProcAttr puts the child in its own process group, so a terminal's
// Ctrl-C reaches only the parent, which stops its children in order. There is
// no parent-death signal here; the child ends when its stdin reaches end of
// file (ParentContext).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
