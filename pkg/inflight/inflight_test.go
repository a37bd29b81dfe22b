package inflight

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestWaitReturnsWhenTheLastRequestEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c Counter
		c.Add()
		c.Add()
		go func() {
			time.Sleep(time.Second)
			c.Done()
			time.Sleep(time.Second)
			c.Done()
		}()
		start := time.Now()
		if !c.Wait(time.Minute) {
			t.Fatal("Wait gave up with every request finished")
		}
		if el := time.Since(start); el != 2*time.Second {
			t.Fatalf("Wait returned after %v, want when the last request ended (2s)", el)
		}
		if c.Len() != 0 {
			t.Fatalf("Len %d after both ended", c.Len())
		}
	})
}

func TestWaitGivesUpAfterItsTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c Counter
		c.Add()
		start := time.Now()
		if c.Wait(3 * time.Second) {
			t.Fatal("Wait reported idle with a request in flight")
		}
		if el := time.Since(start); el != 3*time.Second {
			t.Fatalf("Wait gave up after %v, want 3s", el)
		}
		c.Done()
		if !c.Wait(0) {
			t.Fatal("Wait(0) with nothing in flight")
		}
	})
}

func TestWaitWithoutLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c Counter
		c.Add()
		go func() {
			time.Sleep(time.Hour)
			c.Done()
		}()
		if !c.Wait(-1) {
			t.Fatal("Wait(-1) gave up")
		}
	})
}

func TestDoneWithoutAddPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Done without Add did not panic")
		}
	}()
	var c Counter
	c.Done()
}

// TestDrainEndsAtTheFirstOfIdleGraceAndDeadline: Drain waits for the last
// request within the grace, and the caller's deadline cuts the grace short.
func TestDrainEndsAtTheFirstOfIdleGraceAndDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c Counter
		c.Add()
		go func() {
			time.Sleep(time.Second)
			c.Done()
		}()
		if !c.Drain(context.Background(), time.Minute) {
			t.Fatal("Drain gave up before the request it waited for ended")
		}

		c.Add()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		if c.Drain(ctx, time.Hour) {
			t.Fatal("Drain reported idle with a request in flight")
		}
		if el := time.Since(start); el != 2*time.Second {
			t.Fatalf("Drain gave up after %v, want at the deadline (2s), before the grace (1h)", el)
		}
		start = time.Now()
		if c.Drain(context.Background(), 3*time.Second) {
			t.Fatal("Drain reported idle with a request in flight")
		}
		if el := time.Since(start); el != 3*time.Second {
			t.Fatalf("Drain gave up after %v, want at the grace (3s)", el)
		}
		c.Done()
	})
}
