// Package orchestrator drives runs: it is the only writer of run ledgers.
//
// Starting a run and resuming one are the same call: every drive reads the
// run's ledger, folds it, and continues from what it says. A tool invocation
// is appended and acknowledged before its effect; a step invoked with no
// outcome is recorded indeterminate by the next drive and never re-run.
package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
)

// Config configures the orchestrator.
type Config struct {
	// Name identifies this process in leases and driver-resolved entries.
	Name   string
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// LeaseTTL is how long a drive claim lives without renewal (default 15 s);
	// SweepInterval how often unclaimed runs are looked for (default LeaseTTL).
	LeaseTTL      time.Duration
	SweepInterval time.Duration
	// ExecReplyGrace is how long past a statement's timeout the orchestrator
	// waits for the executor's reply before recording the step indeterminate
	// (default 5 s).
	ExecReplyGrace time.Duration
	// AfterInvoke, when set, is called after a tool-invoked entry is
	// acknowledged and before the executor is asked. Tests use it to stop a
	// process inside the window the indeterminate rule exists for.
	AfterInvoke func(runID string, inv contracts.ToolInvoked)
}

// Service is a running orchestrator.
type Service struct {
	cfg    Config
	log    *slog.Logger
	nc     *nats.Conn
	ledger *ledger.Ledger
	conns  jetstream.KeyValue
	leases *leases
	svc    micro.Service

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	drives map[string]context.CancelFunc
}

// New validates cfg and returns an orchestrator that is not yet started.
func New(cfg Config) (*Service, error) {
	if cfg.Name == "" {
		cfg.Name = "orchestrator-" + nats.NewInbox()[len(nats.InboxPrefix):][:8]
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 15 * time.Second
	}
	if cfg.ExecReplyGrace <= 0 {
		cfg.ExecReplyGrace = 5 * time.Second
	}
	if cfg.SweepInterval <= 0 {
		cfg.SweepInterval = cfg.LeaseTTL
	}
	return &Service{cfg: cfg, log: cfg.Logger.With("service", "orchestrator", "name", cfg.Name), drives: map[string]context.CancelFunc{}}, nil
}

// Start binds to the ledger and buckets, serves the run commands in the
// orchestrator queue group, and starts the resume sweep.
func (s *Service) Start(ctx context.Context, nc *nats.Conn) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("orchestrator: jetstream: %w", err)
	}
	s.nc = nc
	if s.ledger, err = ledger.Open(ctx, js, ledger.WithWriter(s.cfg.Name)); err != nil {
		return fmt.Errorf("orchestrator: %w", err)
	}
	if s.conns, err = js.KeyValue(ctx, contracts.ConnectionsBucket); err != nil {
		return fmt.Errorf("orchestrator: bucket %s: %w", contracts.ConnectionsBucket, err)
	}
	kv, err := js.KeyValue(ctx, contracts.LeasesBucket)
	if err != nil {
		return fmt.Errorf("orchestrator: bucket %s: %w", contracts.LeasesBucket, err)
	}
	s.leases = &leases{kv: kv, owner: s.cfg.Name, ttl: s.cfg.LeaseTTL, now: s.cfg.Now}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))

	svc, err := micro.AddService(nc, micro.Config{
		Name:        "orchestrator",
		Version:     "0.1.0",
		Description: "Sonde run loop: the only writer of run ledgers",
		QueueGroup:  contracts.QueueOrchestrator,
	})
	if err != nil {
		return fmt.Errorf("orchestrator: register service: %w", err)
	}
	s.svc = svc
	if err := svc.AddEndpoint("start", micro.HandlerFunc(s.handleStart), micro.WithEndpointSubject(contracts.SubjectRunStart)); err != nil {
		return fmt.Errorf("orchestrator: endpoint start: %w", err)
	}
	if err := svc.AddEndpoint("cancel", micro.HandlerFunc(s.handleCancel), micro.WithEndpointSubject(contracts.SubjectRunCancel)); err != nil {
		return fmt.Errorf("orchestrator: endpoint cancel: %w", err)
	}
	// The server must know the subscriptions before anyone is told we are up.
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		return fmt.Errorf("orchestrator: flush subscriptions: %w", err)
	}
	s.wg.Add(1)
	go s.sweepLoop()
	s.log.Info("orchestrator started")
	return nil
}

// Stop stops serving, abandons running drives (their leases expire and another
// orchestrator resumes them), and waits for the drive goroutines to return.
func (s *Service) Stop() {
	if s.svc != nil {
		_ = s.svc.Stop()
	}
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
}

func (s *Service) handleStart(req micro.Request) {
	var cmd contracts.StartRun
	if err := json.Unmarshal(req.Data(), &cmd); err != nil {
		_ = req.RespondJSON(contracts.StartRunReply{Error: &contracts.Error{Code: contracts.CodeBadRequest, Message: "start command is not valid JSON"}})
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	_ = req.RespondJSON(s.StartRun(ctx, cmd))
}

func (s *Service) handleCancel(req micro.Request) {
	var cmd contracts.CancelRun
	if err := json.Unmarshal(req.Data(), &cmd); err != nil {
		_ = req.RespondJSON(contracts.CancelRunReply{Error: &contracts.Error{Code: contracts.CodeBadRequest, Message: "cancel command is not valid JSON"}})
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	_ = req.RespondJSON(s.CancelRun(ctx, cmd))
}

// runError builds a reply error.
func runError(code, msg, fix string) *contracts.Error {
	return &contracts.Error{Code: code, Message: msg, Fix: fix}
}

// errIsNotFound reports a missing ledger.
func errIsNotFound(err error) bool { return errors.Is(err, ledger.ErrNotFound) }
