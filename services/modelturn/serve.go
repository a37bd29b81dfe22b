package modelturn

import (
	"time"

	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
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
// contracts.QueueModelTurn queue group. ctx bounds registration only; the
// service runs until Stop.
func (s *Service) Start(ctx context.Context, nc *nats.Conn) error {
	if nc == nil {
		return errors.New("modelturn: nil NATS connection")
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("modelturn: start: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
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
	s.nc, s.svc = nc, svc
	s.log.Info("modelturn started", "provider", s.provider, "model", s.model, "demo", s.demo)
	return nil
}

// Stop stops serving, cancels the calls in flight (each answers a failure)
// and waits for them, and closes the demo replay server. It is safe to call
// more than once, and without Start.
func (s *Service) Stop() {
	s.once.Do(func() {
		s.mu.Lock()
		svc, cancel := s.svc, s.cancel
		s.stopped = true
		s.mu.Unlock()
		if svc != nil {
			_ = svc.Stop()
		}
		if cancel != nil {
			cancel()
		}
		s.wg.Wait()
		if s.replay != nil {
			_ = s.replay.Close()
		}
	})
}

// handleTurn answers one turn request on a goroutine of its own, so that a
// slow model call does not hold up the next request; at most
// maxConcurrentTurns run at once.
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
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		<-s.sem
		_ = req.RespondJSON(s.stopping())
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer func() { <-s.sem }()
		_ = req.RespondJSON(s.Turn(ctx, in))
	}()
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
	if s.stopped {
		s.mu.Unlock()
		_ = req.RespondJSON(contracts.ModelProbeReply{Provider: s.provider, Model: s.model, Demo: s.demo,
			Failure: &contracts.ModelFailure{Reason: contracts.ReasonModelUnavailable, Retryable: true, Message: "the model-turn service is stopping"}})
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
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
