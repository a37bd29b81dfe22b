package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sondehq/sonde/contracts"
)

// leases are drive claims in the sonde_leases bucket: key = run id, value =
// owner and expiry. A claim is taken and renewed with the bucket's own
// compare-and-set, so two orchestrators never both believe they drive a run;
// the ledger's compare-and-append is the second line behind it.
type leases struct {
	kv    jetstream.KeyValue
	owner string
	ttl   time.Duration
	now   func() time.Time
}

type leaseValue struct {
	Owner   string    `json:"owner"`
	Expires time.Time `json:"expires"`
}

var errLeaseHeld = errors.New("orchestrator: run is driven elsewhere")

func (l *leases) value() []byte {
	b, _ := json.Marshal(leaseValue{Owner: l.owner, Expires: l.now().Add(l.ttl)})
	return b
}

// claim takes the run's lease if it is free, expired or already ours.
func (l *leases) claim(ctx context.Context, runID string) (uint64, error) {
	rev, err := l.kv.Create(ctx, runID, l.value())
	if err == nil {
		return rev, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return 0, err
	}
	cur, err := l.kv.Get(ctx, runID)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return l.kv.Create(ctx, runID, l.value())
		}
		return 0, err
	}
	var v leaseValue
	if json.Unmarshal(cur.Value(), &v) == nil && v.Owner != l.owner && l.now().Before(v.Expires) {
		return 0, errLeaseHeld
	}
	rev, err = l.kv.Update(ctx, runID, l.value(), cur.Revision())
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
		return 0, errLeaseHeld
	}
	return rev, err
}

// renew extends a held lease. errLeaseLost means someone else wrote it
// meanwhile; any other error (a timeout, a JetStream leader election) says
// nothing about who holds it, and the renewal is tried again.
func (l *leases) renew(ctx context.Context, runID string, rev uint64) (uint64, error) {
	next, err := l.extend(ctx, runID, rev)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, fmt.Errorf("%w: %w", errLeaseLost, err)
	}
	return next, err
}

// extend writes the lease anew at revision rev.
func (l *leases) extend(ctx context.Context, runID string, rev uint64) (uint64, error) {
	return l.kv.Update(ctx, runID, l.value(), rev)
}

// errLeaseLost is a renewal refused because the lease is no longer the one
// this drive wrote: another claimant took it, or it was removed.
var errLeaseLost = errors.New("orchestrator: the lease was taken or removed")

// handOff marks a held lease lapsed without removing it, for a drive that
// stops before its run ended (the process drains, or the drive failed): the
// next sweep anywhere claims it at once instead of waiting out its TTL, and
// the key stays, so no sweep can miss the run. As release, it follows a
// renewal whose revision never came back; anyone else's lease is left alone.
func (l *leases) handOff(ctx context.Context, runID string, rev uint64) error {
	lapsed, _ := json.Marshal(leaseValue{Owner: l.owner})
	_, err := l.kv.Update(ctx, runID, lapsed, rev)
	if err == nil {
		return nil
	}
	e, lookErr := l.kv.Get(ctx, runID)
	if lookErr != nil || e.Revision() <= rev {
		return err
	}
	var v leaseValue
	if json.Unmarshal(e.Value(), &v) != nil || l.owner != v.Owner {
		return err
	}
	_, err = l.kv.Update(ctx, runID, lapsed, e.Revision())
	return err
}

// release drops a held lease; only a drive whose run has ended releases
// one (a run that has not ended keeps its key, lapsed at worst, so that the
// sweep finds it). rev must be the lease's current revision
// (the last renewal's, not the claim's): a delete at a stale revision is
// refused and would leave the lease to lapse and the run to be "resumed".
func (l *leases) release(ctx context.Context, runID string, rev uint64) {
	if err := l.kv.Delete(ctx, runID, jetstream.LastRevision(rev)); err == nil {
		return
	}
	// A renewal cut short by the drive's end may have landed without its
	// revision coming back: the lease is then still ours, one revision on.
	// Drop it there; anyone else's is left alone.
	e, err := l.kv.Get(ctx, runID)
	if err != nil || e.Revision() <= rev {
		return
	}
	var v leaseValue
	if json.Unmarshal(e.Value(), &v) != nil || v.Owner != l.owner {
		return
	}
	_ = l.kv.Delete(ctx, runID, jetstream.LastRevision(e.Revision()))
}

// probeKey is the key a health probe writes; it is no run id, so the sweep
// never takes it for a lapsed lease.
func (l *leases) probeKey() string {
	name := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, l.owner)
	return "probe." + name
}

// probe writes and removes one small key: whether the store takes writes.
func (l *leases) probe(ctx context.Context) error {
	if _, err := l.kv.Put(ctx, l.probeKey(), l.value()); err != nil {
		return err
	}
	return l.kv.Purge(ctx, l.probeKey())
}

// held is a claimed lease: its run and its current revision, which the
// renewals advance and the release uses.
type held struct {
	mu    sync.Mutex
	runID string
	rev   uint64
}

func (h *held) revision() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rev
}

func (h *held) set(rev uint64) {
	h.mu.Lock()
	h.rev = rev
	h.mu.Unlock()
}

// expired lists runs whose lease lapsed (their drive died or handed the
// run off) or is this process's own while local(run) says no drive of it
// runs here (a drive that ended without handing it off), and every run
// that holds a lease key at all in keys.
func (l *leases) expired(ctx context.Context, local func(string) bool, keys map[string]bool) ([]string, error) {
	lister, err := l.kv.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for key := range lister.Keys() {
		if !contracts.ValidRunID(key) {
			continue // a health probe's key, not a drive claim
		}
		keys[key] = true
		e, err := l.kv.Get(ctx, key)
		if err != nil {
			continue
		}
		var v leaseValue
		switch {
		case json.Unmarshal(e.Value(), &v) != nil, l.now().After(v.Expires):
			out = append(out, key)
		case v.Owner == l.owner && !local(key):
			out = append(out, key)
		}
	}
	return out, nil
}
