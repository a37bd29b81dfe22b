package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
)

// This file holds how a drive rides out faults of the parts it depends on:
// a model turn lost mid-call, a modelturn or executor that is briefly absent
// (restarting, draining, saturated), and a JetStream store that refuses
// writes for lack of storage.

// backoff is the wait before attempt n+1 (n from 0): doubling from base,
// capped.
func backoff(n int, base, ceiling time.Duration) time.Duration {
	d := base
	for i := 0; i < n && d < ceiling; i++ {
		d *= 2
	}
	return min(d, ceiling)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// absence tracks one dependency's absence within a drive: since when nobody
// answered, and how many times the drive has waited.
type absence struct {
	since time.Time
	waits int
}

// wait reports whether the absence is still inside grace and, if so, waits
// the next backoff. It returns false once grace is spent or ctx ends.
func (a *absence) wait(ctx context.Context, now func() time.Time, grace time.Duration) bool {
	if a.since.IsZero() {
		a.since = now()
	}
	if now().Sub(a.since) >= grace {
		return false
	}
	d := min(backoff(a.waits, 100*time.Millisecond, 2*time.Second), grace-now().Sub(a.since))
	a.waits++
	return sleep(ctx, max(d, time.Millisecond)) == nil
}

// errTurnLost is a model turn whose modelturn replica went silent: no
// heartbeat and no text for TurnSilence.
var errTurnLost = errors.New("orchestrator: the model turn went silent")

// watchTurn cancels ctx with errTurnLost when nothing arrives on the run's
// delta subject for silence. The returned stop ends the watch. Without a
// subscription (a NATS user that may not subscribe to deltas) the turn is
// bounded only by its own timeout.
func (s *Service) watchTurn(ctx context.Context, cancel context.CancelCauseFunc, runID string, silence time.Duration) (stop func()) {
	if !s.heartbeats {
		return func() {}
	}
	beat := make(chan struct{}, 1)
	sub, err := s.nc.Subscribe(contracts.ModelDeltaSubject(runID), func(*nats.Msg) {
		select {
		case beat <- struct{}{}:
		default:
		}
	})
	if err != nil {
		s.log.Warn("cannot watch model heartbeats; a lost turn waits for its timeout", "run", runID, "err", err)
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTimer(silence)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-beat:
				if !t.Stop() {
					<-t.C
				}
				t.Reset(silence)
			case <-t.C:
				cancel(errTurnLost)
				return
			}
		}
	}()
	return func() {
		close(done)
		_ = sub.Unsubscribe()
	}
}

// canWatchTurns reports whether this connection may subscribe to model
// deltas. A NATS user without that permission (a permissions file from before
// heartbeats) would see every turn as silent and lose it; such a process
// bounds a turn by its timeout alone, and says so once.
func (s *Service) canWatchTurns(nc *nats.Conn) bool {
	before := nc.LastError()
	sub, err := nc.SubscribeSync(contracts.ModelDeltaSubject("orchestrator-permission-check"))
	if err == nil {
		err = nc.FlushTimeout(5 * time.Second)
		_ = sub.Unsubscribe()
	}
	if err == nil {
		// A refused subscription is reported asynchronously; the server's
		// words name the subject, the only place it appears.
		last := nc.LastError()
		if last != nil && !errors.Is(last, before) && errors.Is(last, nats.ErrPermissionViolation) &&
			strings.Contains(last.Error(), "sonde.model.delta") {
			err = last
		}
	}
	if err != nil {
		s.log.Warn("cannot watch model-turn heartbeats (subscribe to sonde.model.delta.> is not permitted?); a lost turn waits for its timeout",
			"err", err)
		return false
	}
	return true
}

// storeHealth remembers whether the last ledger or lease write was refused
// for lack of storage, so that readiness can say so.
type storeHealth struct {
	mu      sync.Mutex
	failing error
	since   time.Time
}

// storeFailed records a write refused for lack of storage; the first of a
// spell is logged as an error with its cause.
func (s *Service) storeFailed(runID string, err error) {
	s.store.mu.Lock()
	first := s.store.failing == nil
	s.store.failing = err
	if first {
		s.store.since = s.cfg.Now()
	}
	s.store.mu.Unlock()
	if first {
		s.log.Error("JetStream refuses ledger writes for lack of storage; runs wait and retry until there is room",
			"run", runID, "err", err)
	}
}

// storeOK records a write that landed.
func (s *Service) storeOK() {
	s.store.mu.Lock()
	was := s.store.failing
	since := s.store.since
	s.store.failing = nil
	s.store.mu.Unlock()
	if was != nil {
		s.log.Info("JetStream accepts ledger writes again", "after", s.cfg.Now().Sub(since).Round(time.Millisecond))
	}
}

func (s *Service) storeProblem() error {
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	return s.store.failing
}

// Health says whether this orchestrator can record runs now. A store that
// refused a write is probed with a small write of its own, so that room made
// again is noticed without waiting for a run to append.
func (s *Service) Health(ctx context.Context) contracts.RunHealth {
	if err := s.ledger.Check(ctx); err != nil {
		return contracts.RunHealth{Cause: "the run ledger cannot be reached: " + err.Error()}
	}
	if err := s.storeProblem(); err != nil {
		if perr := s.leases.probe(ctx); perr != nil {
			if ledger.IsStorageFull(perr) {
				return contracts.RunHealth{Cause: fmt.Sprintf("JetStream refuses writes for lack of storage (%v); free space or raise the store's limits", perr)}
			}
			return contracts.RunHealth{Cause: "the lease bucket cannot be written: " + perr.Error()}
		}
		s.storeOK()
	}
	return contracts.RunHealth{Ready: true}
}

// appendRetrying appends one entry, waiting out a store that is full: the
// entry is retried with backoff until it lands, the drive's context ends, or
// the service stops. Every other error returns at once.
func (d *drive) appendRetrying(ctx context.Context, kind contracts.EventKind, payload any) (contracts.Entry, error) {
	for n := 0; ; n++ {
		e, err := d.w.Append(ctx, kind, payload)
		if err == nil {
			d.s.storeOK()
			return e, nil
		}
		if !ledger.IsStorageFull(err) {
			return e, err
		}
		d.s.storeFailed(d.runID, err)
		wait := backoff(n, 100*time.Millisecond, 5*time.Second)
		select {
		case <-ctx.Done():
			return e, err
		case <-d.s.ctx.Done():
			return e, err
		case <-time.After(wait):
		}
	}
}
