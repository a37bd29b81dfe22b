package orchestrator

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestAbsenceWaitsOutTheGraceWithBackoff: an absent dependency is asked
// again with doubling waits, capped, until the grace is spent, and no longer.
func TestAbsenceWaitsOutTheGraceWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const grace = 30 * time.Second
		start := time.Now()
		var a absence
		waits := 0
		for a.wait(context.Background(), time.Now, grace) {
			waits++
		}
		took := time.Since(start)
		if took < grace || took > grace+time.Second {
			t.Fatalf("waited %s for a grace of %s", took, grace)
		}
		// 100 ms doubling to 2 s: 0.1+0.2+0.4+0.8+1.6 = 3.1 s, then 2 s apiece.
		if waits < 15 || waits > 20 {
			t.Fatalf("asked again %d times", waits)
		}
	})
}

// TestAbsenceStopsWithTheDrive: a drive that ends stops waiting at once.
func TestAbsenceStopsWithTheDrive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(500*time.Millisecond, cancel)
		var a absence
		start := time.Now()
		for a.wait(ctx, time.Now, time.Hour) {
		}
		if took := time.Since(start); took > time.Second {
			t.Fatalf("kept waiting %s after the drive ended", took)
		}
	})
}

func TestBackoff(t *testing.T) {
	for n, want := range []time.Duration{100, 200, 400, 800, 1600, 2000, 2000} {
		if got := backoff(n, 100*time.Millisecond, 2*time.Second); got != want*time.Millisecond {
			t.Errorf("backoff(%d) = %s, want %s", n, got, want*time.Millisecond)
		}
	}
}
