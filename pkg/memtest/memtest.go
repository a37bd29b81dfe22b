// Package memtest measures how far a process's resident memory rises while
// a piece of work runs, for tests that hold a memory bound to what the
// operating system actually gave the process (a Go heap figure misses what
// C code — SQLite, DuckDB, libpg_query — allocates).
package memtest

import (
	"bytes"
	"errors"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// residentBytes reads the resident set size from /proc/self/statm.
func residentBytes() (int64, error) {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	fields := bytes.Fields(data)
	if len(fields) < 2 {
		return 0, errors.New("memtest: /proc/self/statm has no resident field")
	}
	pages, err := strconv.ParseInt(string(fields[1]), 10, 64)
	if err != nil {
		return 0, err
	}
	return pages * int64(os.Getpagesize()), nil
}

// ResidentGrowth samples the resident set size every millisecond while fn
// runs and returns how far it rose above its level before fn (after a
// garbage collection that returned free memory to the system). It skips the
// test where /proc/self/statm cannot be read.
func ResidentGrowth(t testing.TB, fn func()) int64 {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	base, err := residentBytes()
	if err != nil {
		t.Skipf("resident memory cannot be read here: %v", err)
	}
	var peak atomic.Int64
	peak.Store(base)
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if r, err := residentBytes(); err == nil && r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	fn()
	close(stop)
	<-sampled
	return peak.Load() - base
}
