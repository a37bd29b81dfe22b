package modelturn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/micro"
	"github.com/sondehq/sonde/contracts"
)

// ServiceName is the name the service registers under in the NATS micro
// framework (`nats micro ls`).
const ServiceName = "modelturn"

// ServiceVersion is the registered service version.
const ServiceVersion = "0.1.0"

// Start registers the service with the NATS micro framework and serves
// contracts.SubjectModelTurn and contracts.SubjectModelProbe in the
// contracts.QueueModelTurn queue group, on Config.NATS. ctx bounds
// registration only; the service runs until Stop.
func (s *Service) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("modelturn: start: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	nc := s.nc
	if nc == nil {
		return ErrNoConn
	}
	if s.stopped {
		return errors.New("modelturn: start after stop")
	}
	if s.svc != nil {
		return errors.New("modelturn: already started")
	}
	// Handlers read ctx; it exists before the first endpoint does.
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	svc, err := micro.AddService(nc, micro.Config{
		Name:        ServiceName,
		Version:     ServiceVersion,
		Description: "Sonde model turns: one streamed model call per request",
		QueueGroup:  contracts.QueueModelTurn,
		Metadata:    map[string]string{"provider": s.provider, "model": s.model, "demo": fmt.Sprint(s.demo)},
	})
	if err != nil {
		s.cancel()
		return fmt.Errorf("modelturn: register service: %w", err)
	}
	if err := svc.AddEndpoint("turn", micro.HandlerFunc(s.handleTurn), micro.WithEndpointSubject(contracts.SubjectModelTurn)); err != nil {
		_ = svc.Stop()
		s.cancel()
		return fmt.Errorf("modelturn: endpoint turn: %w", err)
	}
	if err := svc.AddEndpoint("probe", micro.HandlerFunc(s.handleProbe), micro.WithEndpointSubject(contracts.SubjectModelProbe)); err != nil {
		_ = svc.Stop()
		s.cancel()
		return fmt.Errorf("modelturn: endpoint probe: %w", err)
	}
	// The endpoints are live once the server has seen their subscriptions.
	if err := nc.FlushTimeout(5 * time.Second); err != nil {
		_ = svc.Stop()
		s.cancel()
		return fmt.Errorf("modelturn: flush subscriptions: %w", err)
	}
	s.svc = svc
	s.log.Info("modelturn started", "provider", s.provider, "model", s.model, "demo", s.demo)
	return nil
}

// ErrNoConn is returned by Start when Config.NATS is nil.
var ErrNoConn = errors.New("modelturn: Config.NATS is nil: Start needs a NATS connection")

// Stop drains the service: it stops taking requests (new ones go to another
// replica, or find no responders, which the orchestrator waits out), lets
// the turns in flight finish for up to the drain timeout or until ctx ends,
// whichever comes first, then cancels what is left (each answers a
// retryable failure, so its run asks again) and waits for it, and closes the
// demo replay server. It is safe to call more than once, and without Start;
// the service cannot be started again.
func (s *Service) Stop(ctx context.Context) error {
	s.once.Do(func() {
		s.mu.Lock()
		svc, cancel := s.svc, s.cancel
		s.mu.Unlock()
		if svc != nil {
			_ = svc.Stop()
		}
		if !s.inflight.Drain(ctx, s.drain) {
			s.log.Warn("drain timeout: cancelling the model turns still in flight", "timeout", s.drain, "stopCtx", ctx.Err())
		}
		s.mu.Lock()
		s.stopped = true // nothing starts after this
		s.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		s.inflight.Wait(-1)
		if s.replay != nil {
			_ = s.replay.Close()
		}
	})
	return nil
}

// begin counts one request in flight, unless the service has stopped.
func (s *Service) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	s.inflight.Add()
	return true
}

// end counts one request done.
func (s *Service) end() { s.inflight.Done() }

// handleTurn answers one turn request on a goroutine of its own, so that a
// slow model call does not hold up the next request; at most
// maxConcurrentTurns run at once. While the call runs, the turn's heartbeat
// tells the orchestrator this replica is still at it.
func (s *Service) handleTurn(req micro.Request) {
	var in contracts.ModelTurnRequest
	if err := json.Unmarshal(req.Data(), &in); err != nil {
		_ = req.RespondJSON(contracts.ModelTurnReply{Provider: s.provider, Model: s.model, Demo: s.demo,
			Failure: &contracts.ModelFailure{Reason: contracts.ReasonInternal, Message: "the turn request is not valid JSON"}})
		return
	}
	s.mu.Lock()
	ctx := s.ctx
	s.mu.Unlock()
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		_ = req.RespondJSON(s.stopping())
		return
	}
	if !s.begin() {
		<-s.sem
		_ = req.RespondJSON(s.stopping())
		return
	}
	go func() {
		defer s.end()
		defer func() { <-s.sem }()
		stop := s.heartbeat(in)
		reply := s.Turn(ctx, in)
		stop()
		if reply.Failure != nil && ctx.Err() != nil {
			// Cancelled because the service stops, not because the model
			// failed: the run asks another replica.
			reply = s.stopping()
		}
		_ = req.RespondJSON(reply)
	}()
}

// heartbeat publishes a heartbeat on the turn's delta subject every beat
// interval until the returned stop is called.
func (s *Service) heartbeat(in contracts.ModelTurnRequest) (stop func()) {
	s.mu.Lock()
	nc := s.nc
	s.mu.Unlock()
	if nc == nil || !contracts.ValidRunID(in.RunID) {
		return func() {}
	}
	b, err := json.Marshal(contracts.ModelDelta{RunID: in.RunID, Turn: in.Turn, Heartbeat: true})
	if err != nil {
		return func() {}
	}
	subject := contracts.ModelDeltaSubject(in.RunID)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(s.beat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = nc.Publish(subject, b) // a lost beat costs at most one retried turn
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// stopping is the reply to a request that arrives while the service stops.
func (s *Service) stopping() contracts.ModelTurnReply {
	return contracts.ModelTurnReply{Provider: s.provider, Model: s.model, Demo: s.demo,
		Failure: &contracts.ModelFailure{Reason: contracts.ReasonModelUnavailable, Retryable: true,
			Message: "the model-turn service is stopping"}}
}

// handleProbe answers a probe on a goroutine of its own: a capability probe
// is a model call.
func (s *Service) handleProbe(req micro.Request) {
	var in contracts.ModelProbeRequest
	_ = json.Unmarshal(req.Data(), &in) // an empty or undecodable body asks for no capabilities
	s.mu.Lock()
	ctx := s.ctx
	s.mu.Unlock()
	if !s.begin() {
		_ = req.RespondJSON(contracts.ModelProbeReply{Provider: s.provider, Model: s.model, Demo: s.demo,
			Failure: &contracts.ModelFailure{Reason: contracts.ReasonModelUnavailable, Retryable: true, Message: "the model-turn service is stopping"}})
		return
	}
	go func() {
		defer s.end()
		_ = req.RespondJSON(s.Probe(ctx, in))
	}()
}

// deltas returns the function that publishes a turn's text deltas, or nil
// when the service is not connected or the run id cannot name a subject.
func (s *Service) deltas(req contracts.ModelTurnRequest) func(string) {
	if s.onDelta != nil {
		return s.onDelta
	}
	s.mu.Lock()
	nc := s.nc
	s.mu.Unlock()
	if nc == nil || !contracts.ValidRunID(req.RunID) {
		return nil
	}
	subject := contracts.ModelDeltaSubject(req.RunID)
	failed := false
	return func(text string) {
		b, err := json.Marshal(contracts.ModelDelta{RunID: req.RunID, Turn: req.Turn, Text: text})
		if err == nil {
			err = nc.Publish(subject, b)
		}
		if err != nil && !failed {
			failed = true // once per turn is enough
			s.log.Warn("publish model delta", "runId", req.RunID, "turn", req.Turn, "err", err)
		}
	}
}
