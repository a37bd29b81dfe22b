package orchestrator

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/natstest"
)

// TestStartNeedsNATSAndStopTwiceIsSafe: Start without Config.NATS says so;
// a started orchestrator serves its commands, and a second Stop (and one
// without Start) does nothing.
func TestStartNeedsNATSAndStopTwiceIsSafe(t *testing.T) {
	idle, err := New(Config{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	if err := idle.Start(context.Background()); !errors.Is(err, ErrNoConn) {
		t.Fatalf("Start without NATS: %v, want ErrNoConn", err)
	}
	if err := idle.Stop(context.Background()); err != nil {
		t.Fatalf("Stop without Start: %v", err)
	}

	srv := natstest.Start(t)
	s, err := New(Config{Logger: discard(), SweepInterval: time.Hour, NATS: srv.Connect()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	client := srv.Connect()
	if _, err := client.Request(contracts.SubjectRunHealth, []byte("{}"), 5*time.Second); err != nil {
		t.Fatalf("health of a started orchestrator: %v", err)
	}
	for i := range 2 {
		if err := s.Stop(context.Background()); err != nil {
			t.Fatalf("Stop %d: %v", i+1, err)
		}
	}
}
