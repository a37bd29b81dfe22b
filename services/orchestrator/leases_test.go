package orchestrator

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestReleaseDropsOurLeaseWhateverRevisionWeSaw: a renewal that landed
// while its answer was lost (the drive ended mid-renewal) leaves the lease
// one revision past what the drive knows; the release still drops it. A
// lease someone else holds by then is never dropped.
func TestReleaseDropsOurLeaseWhateverRevisionWeSaw(t *testing.T) {
	h := newHarness(t, Config{})
	ctx := context.Background()
	ours := h.s.leases
	rev, err := ours.claim(ctx, "unseen")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ours.renew(ctx, "unseen", rev); err != nil { // landed; its revision never came back
		t.Fatal(err)
	}
	ours.release(ctx, "unseen", rev)
	if _, err := ours.kv.Get(ctx, "unseen"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("our lease survived its release at the revision we saw: %v", err)
	}

	// Another orchestrator took the run over after our lease lapsed.
	rev, err = ours.claim(ctx, "taken")
	if err != nil {
		t.Fatal(err)
	}
	other := &leases{kv: ours.kv, owner: "other", ttl: time.Second, now: func() time.Time { return time.Now().Add(time.Hour) }}
	if _, err := other.claim(ctx, "taken"); err != nil {
		t.Fatal(err)
	}
	ours.release(ctx, "taken", rev)
	if _, err := ours.kv.Get(ctx, "taken"); err != nil {
		t.Fatalf("our release dropped another orchestrator's lease: %v", err)
	}
}
