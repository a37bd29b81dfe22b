//go:build !unix

package supervise

import "syscall"

// sysProcAttr: no process group or parent-death signal here; the child ends
// when its stdin reaches end of file (ParentContext).
func sysProcAttr() *syscall.SysProcAttr { return nil }
