// Package cputest tells, for tests that hold a deadline to what really ran,
// whether work is still burning CPU in this process after the call that
// started it returned (a statement inside SQLite or DuckDB that a deadline
// failed to stop keeps a core busy).
package cputest

import (
	"syscall"
	"testing"
	"time"
)

// Used is the CPU time the process has used, user and system; it skips t
// where the operating system cannot say.
func Used(t testing.TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Skipf("CPU time cannot be read here: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// WorkGone fails t when the process still burns CPU once a read returned:
// over a quiet second it may use a quarter of one core, not a statement's
// whole core.
func WorkGone(t testing.TB, what string) {
	t.Helper()
	before := Used(t)
	time.Sleep(time.Second)
	if used := Used(t) - before; used > 250*time.Millisecond {
		t.Errorf("%s: the process used %s of CPU in the second after the read returned: its work is still running", what, used)
	}
}
