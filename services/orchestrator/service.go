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
	"github.com/sondehq/sonde/pkg/artifacts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/natsx"
	"github.com/sondehq/sonde/pkg/registry"
)

// Config configures the orchestrator.
type Config struct {
	// Name identifies this process in leases and driver-resolved entries.
	Name   string
	Logger *slog.Logger
	// NATS is the connection Start serves on and the run loop talks over.
	NATS *nats.Conn
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
	// TurnSilence is how long a model turn may go without a heartbeat or a
	// text delta from modelturn (which beats every few seconds while a turn
	// runs) before the orchestrator takes the turn as lost and asks again: a
	// model turn records nothing until it answers, so asking again is safe
	// (default 20 s).
	TurnSilence time.Duration
	// TurnAttempts is how many times one turn is asked before a run fails
	// because modelturn keeps losing it (default 3).
	TurnAttempts int
	// AbsenceGrace is how long a run waits out a modelturn or an executor
	// that nobody serves (no responders, a draining replica, a saturated
	// executor), asking again with backoff, before it fails the run with
	// model-unavailable or executor-unavailable (default 30 s).
	AbsenceGrace time.Duration
	// StartConcurrency bounds the run commands handled at once (default 64).
	StartConcurrency int
	// NoThreadContext turns conversation context off: a run started with a
	// previous run records its thread as declined ("disabled") and starts
	// without the earlier runs (sonde serve --thread-context=false).
	NoThreadContext bool
	// ContextMaxChars bounds the relations a run's schema snapshot names, in
	// characters (default grounding.DefaultMaxChars); RelationsMaxChars
	// bounds its foreign-key block (default grounding.DefaultRelationsMaxChars).
	ContextMaxChars   int
	RelationsMaxChars int
	// CapturesHeld is how many connections' inventories this process keeps
	// for later runs (default 8; negative: none), each for at most
	// CaptureMaxAge (default 10 min). A held capture is reused only for the
	// same connection, database identity and readable patterns.
	CapturesHeld  int
	CaptureMaxAge time.Duration
	// StartWait is how long Start waits for the ledger stream and the
	// buckets to be visible (default 30 s): in a cluster, one another
	// process just created may not be seen from this node at once.
	StartWait time.Duration
}

// Service is a running orchestrator.
type Service struct {
	cfg    Config
	log    *slog.Logger
	nc     *nats.Conn
	ledger *ledger.Ledger
	conns  *registry.Reader
	leases *leases
	svc    micro.Service

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex
	// drives holds a cancel for every run a start or a drive of this process
	// has reserved (take).
	drives  map[string]context.CancelFunc
	stopped bool
	// handed are the runs whose drives handed their leases off because the
	// service stopped, with their actors: Stop asks the other orchestrators
	// to resume them at once.
	handed []handedRun

	// seen is what the ledger sweep learned of runs without a lease key: -1
	// for a run that ended, else the ledger length it was seen running at.
	seenMu sync.Mutex
	seen   map[string]int64

	// commands bounds the run commands handled at once.
	commands chan struct{}
	// store is what the last ledger or lease write said about storage.
	store storeHealth
	// heartbeats: this connection may watch model-turn heartbeats.
	heartbeats bool
	// models and execs are how drives reach modelturn and the executors:
	// over NATS unless a test set them before Start.
	models modelService
	execs  executorService
	// afterInvoke is WithAfterInvoke's hook; nil unless a test set it.
	afterInvoke func(runID string, inv contracts.ToolInvoked)
	// captures are the inventories held for later runs; artifacts is where
	// an inventory too large for a reply is read from.
	captures  *captures
	artifacts *artifacts.Store
}

// New validates cfg and returns an orchestrator that is not yet started;
// opts are test seams (see Option), never configuration.
func New(cfg Config, opts ...Option) (*Service, error) {
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
	if cfg.TurnSilence <= 0 {
		cfg.TurnSilence = 20 * time.Second
	}
	if cfg.TurnAttempts <= 0 {
		cfg.TurnAttempts = 3
	}
	if cfg.AbsenceGrace <= 0 {
		cfg.AbsenceGrace = 30 * time.Second
	}
	if cfg.StartConcurrency <= 0 {
		cfg.StartConcurrency = 64
	}
	if cfg.CapturesHeld == 0 {
		cfg.CapturesHeld = 8
	}
	if cfg.CaptureMaxAge <= 0 {
		cfg.CaptureMaxAge = 10 * time.Minute
	}
	s := &Service{cfg: cfg, log: cfg.Logger.With("service", "orchestrator", "name", cfg.Name),
		drives: map[string]context.CancelFunc{}, seen: map[string]int64{}, commands: make(chan struct{}, cfg.StartConcurrency),
		captures: &captures{max: cfg.CapturesHeld, maxAge: cfg.CaptureMaxAge}}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// ErrNoConn is returned by Start when Config.NATS is nil.
var ErrNoConn = errors.New("orchestrator: Config.NATS is nil: Start needs a NATS connection")

// Start binds to the ledger and buckets, serves the run commands in the
// orchestrator queue group on Config.NATS, and starts the resume sweep.
func (s *Service) Start(ctx context.Context) error {
	nc := s.cfg.NATS
	if nc == nil {
		return ErrNoConn
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("orchestrator: jetstream: %w", err)
	}
	s.nc = nc
	s.heartbeats = s.canWatchTurns(nc)
	if s.models == nil {
		s.models = natsModel{s}
	}
	if s.execs == nil {
		s.execs = natsExecutors{s}
	}
	// In a cluster a stream or bucket another process just created may not
	// be visible from this node yet: each is waited for, with backoff.
	if err := awaitResource(ctx, s.cfg.StartWait, func(ctx context.Context) (err error) {
		s.ledger, err = ledger.Open(ctx, js, ledger.WithWriter(s.cfg.Name))
		return err
	}); err != nil {
		return fmt.Errorf("orchestrator: %w", err)
	}
	s.openArtifacts(ctx, func(ctx context.Context) (*artifacts.Store, error) { return artifacts.New(ctx, js) })
	if err := awaitResource(ctx, s.cfg.StartWait, func(ctx context.Context) (err error) {
		kv, err := js.KeyValue(ctx, contracts.ConnectionsBucket)
		if err == nil {
			s.conns = registry.New(kv, s.log)
		}
		return err
	}); err != nil {
		return fmt.Errorf("orchestrator: bucket %s: %w", contracts.ConnectionsBucket, err)
	}
	var kv jetstream.KeyValue
	if err := awaitResource(ctx, s.cfg.StartWait, func(ctx context.Context) (err error) {
		kv, err = js.KeyValue(ctx, contracts.LeasesBucket)
		return err
	}); err != nil {
		return fmt.Errorf("orchestrator: bucket %s: %w", contracts.LeasesBucket, err)
	}
	s.leases = &leases{kv: kv, owner: s.cfg.Name, ttl: s.cfg.LeaseTTL, now: s.cfg.Now}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))

	if err := s.serve(nc); err != nil {
		return err
	}
	s.wg.Add(1)
	go s.sweepLoop()
	s.log.Info("orchestrator started")
	return nil
}

// serve registers the run commands in the orchestrator queue group and
// makes sure the server knows the subscriptions before anyone is told we
// are up.
func (s *Service) serve(nc *nats.Conn) error {
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
	if err := svc.AddEndpoint("health", micro.HandlerFunc(s.handleHealth), micro.WithEndpointSubject(contracts.SubjectRunHealth)); err != nil {
		return fmt.Errorf("orchestrator: endpoint health: %w", err)
	}
	// The server must know the subscriptions before anyone is told we are up.
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		return fmt.Errorf("orchestrator: flush subscriptions: %w", err)
	}
	return nil
}

// Stop stops serving and stops the running drives, each handing its lease
// off (marked lapsed, not removed), waits for the drive goroutines to
// return, and then asks the orchestrators still serving to resume those
// runs at once: a graceful stop leaves no run to wait out its lease. The
// drives are cut at once (another orchestrator resumes them), so there is
// nothing for ctx to bound. It is safe to call more than once, and without
// Start.
func (s *Service) Stop(context.Context) error {
	if s.svc != nil {
		_ = s.svc.Stop()
	}
	s.mu.Lock()
	s.stopped = true // no goroutine starts after this
	s.mu.Unlock()
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	s.askResume()
	return nil
}

// handedRun is a run whose lease a stopping drive handed off.
type handedRun struct {
	runID string
	actor contracts.Actor
}

// handedOff notes a run handed off because the service stops.
func (s *Service) handedOff(runID string, actor contracts.Actor) {
	s.mu.Lock()
	s.handed = append(s.handed, handedRun{runID: runID, actor: actor})
	s.mu.Unlock()
}

// askResume sends a start (which resumes a run that exists) of every
// handed-off run to the orchestrator queue group, which this process no
// longer serves: another orchestrator claims the lapsed lease and drives
// the run now rather than at its next sweep. Best effort: without an
// answer, the sweep finds the lapsed lease anyway.
func (s *Service) askResume() {
	s.mu.Lock()
	runs := s.handed
	s.handed = nil
	s.mu.Unlock()
	if len(runs) == 0 || s.nc == nil || s.nc.IsClosed() {
		return
	}
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := contracts.StartRun{RunID: r.runID, Actor: r.actor}
			if err := natsx.Request(context.Background(), s.nc, contracts.SubjectRunStart, start, nil, natsx.WithTimeout(2*time.Second)); err != nil {
				s.log.Info("handed-off run left to the sweep", "run", r.runID, "err", err)
			}
		}()
	}
	wg.Wait()
}

// awaitResource calls open until it succeeds, waiting with backoff while it
// fails for a stream or bucket that is not there (yet) or a JetStream that
// does not answer, for at most wait (default 30 s).
func awaitResource(ctx context.Context, wait time.Duration, open func(context.Context) error) error {
	if wait <= 0 {
		wait = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for n := 0; ; n++ {
		err := open(ctx)
		if err == nil || !transientOpen(err) {
			return err
		}
		if serr := sleep(ctx, backoff(n, 50*time.Millisecond, 2*time.Second)); serr != nil {
			return err
		}
	}
}

// transientOpen reports an error opening a stream or bucket that waiting
// may cure: it does not exist yet, or JetStream did not answer.
func transientOpen(err error) bool {
	return errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrBucketNotFound) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled)
}

// goCommand answers one run command on a goroutine of its own, at most
// StartConcurrency at once: a micro endpoint delivers its requests one after
// another, and a start does several JetStream round trips, so answering
// in the handler would serialise every start behind the one before it.
func (s *Service) goCommand(answer func(ctx context.Context) any, req micro.Request) {
	select {
	case s.commands <- struct{}{}:
	case <-s.ctx.Done():
		return
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		<-s.commands
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer func() { <-s.commands }()
		ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
		defer cancel()
		_ = req.RespondJSON(answer(ctx))
	}()
}

func (s *Service) handleStart(req micro.Request) {
	var cmd contracts.StartRun
	if err := json.Unmarshal(req.Data(), &cmd); err != nil {
		_ = req.RespondJSON(contracts.StartRunReply{Error: &contracts.Error{Code: contracts.CodeBadRequest, Message: "start command is not valid JSON"}})
		return
	}
	s.goCommand(func(ctx context.Context) any { return s.StartRun(ctx, cmd) }, req)
}

func (s *Service) handleCancel(req micro.Request) {
	var cmd contracts.CancelRun
	if err := json.Unmarshal(req.Data(), &cmd); err != nil {
		_ = req.RespondJSON(contracts.CancelRunReply{Error: &contracts.Error{Code: contracts.CodeBadRequest, Message: "cancel command is not valid JSON"}})
		return
	}
	s.goCommand(func(ctx context.Context) any { return s.CancelRun(ctx, cmd) }, req)
}

func (s *Service) handleHealth(req micro.Request) {
	s.goCommand(func(ctx context.Context) any { return s.Health(ctx) }, req)
}

// runError builds a reply error.
func runError(code contracts.Code, msg, fix string) *contracts.Error {
	return &contracts.Error{Code: code, Message: msg, Fix: fix}
}

// errIsNotFound reports a missing ledger.
func errIsNotFound(err error) bool { return errors.Is(err, ledger.ErrNotFound) }
