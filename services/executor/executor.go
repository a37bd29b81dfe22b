// Package executor is Sonde's executor service, one per database engine
// (executor-sqlite, executor-postgres, …): it holds the connections of its
// engine from the connections file, runs the read and schema operations on
// them under the read-only profiles, stores every result as an artifact and
// answers with the bounded, fenced text a model may read.
//
// It serves contracts.ExecSubject(engine, op) over NATS request/reply
// (Start), registered with the NATS micro framework as "executor-<engine>"
// in the queue group of the same name, and in process (Exec) for the CLI and
// benchmarks. Each engine implements engine.Engine in its own package.
package executor

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/artifacts"
	"github.com/sondehq/sonde/pkg/inflight"
	"github.com/sondehq/sonde/pkg/natsx"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/internal/duckdb"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/mssql"
	"github.com/sondehq/sonde/services/executor/internal/postgres"
	"github.com/sondehq/sonde/services/executor/internal/refuse"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
	"github.com/sondehq/sonde/services/executor/internal/sqlite"
)

// Openers holds the engines this build can serve.
var Openers = map[contracts.Engine]engine.Opener{
	contracts.EngineSQLite:   sqlite.OpenConnection,
	contracts.EngineMSSQL:    mssql.OpenConnection,
	contracts.EngineDuckDB:   duckdb.OpenConnection,
	contracts.EnginePostgres: postgres.OpenConnection,
}

// ServiceName is the name of the executor of engine e in the NATS micro
// framework, in --services, and its queue group.
func ServiceName(e contracts.Engine) string { return contracts.QueueExecutorPrefix + string(e) }

// Version is the service version the micro framework reports.
const Version = "0.1.0"

// MaxConcurrentReads bounds the operations one process runs at once; one
// more waits up to Config.BusyWait for a slot and is then refused with
// contracts.RefuseExecutorBusy.
const MaxConcurrentReads = 8

// Defaults of Config.
const (
	// DefaultMemoryBudget is the memory budget of an executor's operations.
	DefaultMemoryBudget = 512 << 20
	// MinMemoryBudget is the smallest budget New accepts.
	MinMemoryBudget = 32 << 20
	// DefaultBusyWait is how long an operation waits for a free slot.
	DefaultBusyWait = 5 * time.Second
	// DefaultDrainGrace is how long Stop lets operations in flight finish.
	DefaultDrainGrace = 8 * time.Second
	// DefaultRetryOpen is the first wait before an unavailable connection is
	// opened again; the wait doubles up to MaxRetryOpen.
	DefaultRetryOpen = time.Second
	// MaxRetryOpen is the longest wait between two attempts to open.
	MaxRetryOpen = 30 * time.Second
	// OpenTimeout bounds one attempt to open a connection, and one privilege check.
	OpenTimeout = 15 * time.Second
)

// readCopies is how many times a value is held while it is read: the wire
// or driver buffer, the scanned Go value, its JSON-ready form and its
// encoding in the row's size check.
const readCopies = 4

// OperationMemory is the share of budget one operation may hold while it
// reads (engine.Options.OperationMemory): an equal share per concurrent
// operation, divided by the copies a value passes through.
func OperationMemory(budget int64) int64 {
	return budget / MaxConcurrentReads / readCopies
}

// ArtifactStore keeps full results; *artifacts.Store is the NATS one.
type ArtifactStore interface {
	Put(ctx context.Context, a contracts.Artifact) error
}

// Config configures a Service.
type Config struct {
	// Engine is the engine this executor serves; empty means sqlite.
	Engine contracts.Engine
	// NATS is the connection Start serves on; New does not need it, so a
	// Service can run operations (Exec) without NATS.
	NATS *nats.Conn
	// Connections is the connections file's content; the executor serves the
	// ones of its engine and ignores the others.
	Connections []connections.Connection
	// Logger receives one line per operation; nil means slog.Default().
	Logger *slog.Logger
	// Artifacts stores results. When nil, Start opens the NATS object store
	// contracts.ArtifactsBucket; before Start, results are not stored (the
	// reply still names a correlation id).
	Artifacts ArtifactStore
	// Resources, when not nil, is declared by Start (natsx.Resources.Ensure)
	// before it uses the buckets; nil means they already exist.
	Resources *natsx.Resources
	// MemoryBudget bounds the memory the operations running at once hold
	// while they read, in bytes; zero means DefaultMemoryBudget. Each of the
	// MaxConcurrentReads slots gets an equal share (OperationMemory), which
	// bounds both what an engine reads of one value and the size of a result.
	MemoryBudget int64
	// BusyWait is how long an operation waits for a slot when
	// MaxConcurrentReads are running, never past its statement timeout;
	// zero means DefaultBusyWait.
	BusyWait time.Duration
	// DrainGrace is how long Stop lets the operations in flight finish
	// before it cancels them; zero means DefaultDrainGrace, negative none.
	DrainGrace time.Duration
	// RetryOpen is the first wait before a connection that could not be
	// opened is tried again (doubling up to MaxRetryOpen); zero means
	// DefaultRetryOpen.
	RetryOpen time.Duration
}

// Service is a running executor of one engine. Exec is safe for concurrent use.
type Service struct {
	engine  contracts.Engine
	name    string
	log     *slog.Logger
	conns   map[string]*served
	order   []string // connection ids, in file order
	sem     chan struct{}
	open    engine.Opener
	opts    engine.Options
	busy    time.Duration
	grace   time.Duration
	retry   time.Duration
	ops     operations
	retries sync.WaitGroup
	// reopen ends the background attempts to open; Stop ends it first.
	reopen     context.Context
	stopReopen context.CancelFunc

	mu        sync.Mutex
	artifacts ArtifactStore
	resources *natsx.Resources
	svc       micro.Service
	nc        *nats.Conn
	cancelSub *nats.Subscription
	stopped   bool             // Stop began: no new request is taken
	closed    bool             // the drain grace is over: nothing more is served
	inflight  inflight.Counter // operations in flight
	base      context.Context  // ends when Stop gives up waiting
	cancel    context.CancelFunc

	// pubMu orders descriptor publications, so the last one written is
	// the connection's latest state.
	pubMu sync.Mutex
	kv    jetstream.KeyValue
}

// served is one connection and its state.
type served struct {
	conn connections.Connection

	mu       sync.Mutex
	engine   engine.Engine // nil while unavailable
	reason   string        // why it is unavailable
	warnings []string
}

// state returns the connection's engine, or nil and why it is unavailable.
func (srv *served) state() (engine.Engine, string) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.engine, srv.reason
}

// descriptor is what is published about the connection now.
func (srv *served) descriptor() contracts.ConnectionDescriptor {
	d := srv.conn.Descriptor()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	d.Status = contracts.ConnectionAvailable
	if srv.engine == nil {
		d.Status, d.Reason = contracts.ConnectionUnavailable, srv.reason
	}
	d.Warnings = slices.Clone(srv.warnings)
	return d
}

// New prepares every connection of cfg's engine and opens it read-only. A
// connection whose database cannot be opened does not stop the executor: it
// is served as unavailable (its descriptor says why, operations on it are
// refused with contracts.RefuseConnectionUnavailable) and opened again in
// the background until it works. New fails only on a configuration error.
func New(cfg Config) (*Service, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if cfg.Engine == "" {
		cfg.Engine = contracts.EngineSQLite
	}
	open, ok := Openers[cfg.Engine]
	if !ok {
		return nil, fmt.Errorf("executor: this build serves no %q engine", cfg.Engine)
	}
	budget := cmp.Or(cfg.MemoryBudget, DefaultMemoryBudget)
	if budget < MinMemoryBudget {
		return nil, fmt.Errorf("executor: a memory budget of %d bytes is below the %d MiB minimum", budget, MinMemoryBudget>>20)
	}
	base, cancel := context.WithCancel(context.Background())
	reopen, stopReopen := context.WithCancel(context.Background())
	s := &Service{
		engine:     cfg.Engine,
		name:       ServiceName(cfg.Engine),
		log:        log.With("service", ServiceName(cfg.Engine)),
		conns:      map[string]*served{},
		sem:        make(chan struct{}, MaxConcurrentReads),
		open:       open,
		opts:       engine.Options{OperationMemory: OperationMemory(budget)},
		busy:       cmp.Or(cfg.BusyWait, DefaultBusyWait),
		grace:      cmp.Or(cfg.DrainGrace, DefaultDrainGrace),
		retry:      cmp.Or(cfg.RetryOpen, DefaultRetryOpen),
		ops:        operations{live: map[string]map[uint64]context.CancelFunc{}, gone: map[string]time.Time{}},
		reopen:     reopen,
		stopReopen: stopReopen,
		artifacts:  cfg.Artifacts,
		resources:  cfg.Resources,
		nc:         cfg.NATS,
		base:       base,
		cancel:     cancel,
	}
	for _, c := range cfg.Connections {
		if c.Engine != cfg.Engine {
			continue
		}
		if err := contracts.CheckID(contracts.IDConnection, c.ID); err != nil {
			return nil, fmt.Errorf("executor: %w", err)
		}
		if _, dup := s.conns[c.ID]; dup {
			return nil, fmt.Errorf("executor: connection %q declared twice", c.ID)
		}
		s.conns[c.ID] = &served{conn: c}
		s.order = append(s.order, c.ID)
	}
	if len(s.conns) == 0 {
		s.log.Warn("no connection to serve", "engine", cfg.Engine)
	}
	// One slow or unreachable database must not hold up the others.
	var wg sync.WaitGroup
	for _, srv := range s.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.tryOpen(srv); err != nil {
				s.retries.Add(1)
				go s.keepOpening(srv)
			}
		}()
	}
	wg.Wait()
	return s, nil
}

// tryOpen opens srv's database once and checks what its read role may do.
// On failure it records why the connection is unavailable.
func (s *Service) tryOpen(srv *served) error {
	ctx, cancel := context.WithTimeout(s.reopen, OpenTimeout)
	defer cancel()
	eng, err := s.open(ctx, srv.conn, s.opts)
	if err != nil {
		reason := unavailableReason(err)
		srv.mu.Lock()
		changed := srv.reason != reason
		srv.reason = reason
		srv.mu.Unlock()
		if changed {
			// The driver's text stays in this log: it may name a host or a path.
			s.log.Warn("connection unavailable; retrying in the background", "connection", srv.conn.ID,
				"reason", reason, "err", err)
		}
		return err
	}
	warnings := s.connectionWarnings(ctx, srv.conn.ID, eng)
	srv.mu.Lock()
	srv.engine, srv.reason, srv.warnings = eng, "", warnings
	srv.mu.Unlock()
	return nil
}

// keepOpening opens srv again with a doubling wait until it works or Stop
// begins, and publishes its descriptor whenever its state changes.
func (s *Service) keepOpening(srv *served) {
	defer s.retries.Done()
	wait := s.retry
	for {
		t := time.NewTimer(wait)
		select {
		case <-s.reopen.Done():
			t.Stop()
			return
		case <-t.C:
		}
		_, before := srv.state()
		if err := s.tryOpen(srv); err == nil {
			s.log.Info("connection available", "connection", srv.conn.ID)
			s.publish(srv)
			return
		}
		if _, after := srv.state(); after != before {
			s.publish(srv)
		}
		wait = min(wait*2, MaxRetryOpen)
	}
}

// unavailableReason says why a database could not be opened, in words that
// name no host, path or credential.
func unavailableReason(err error) string {
	var (
		dns   *net.DNSError
		netOp *net.OpError
		dbErr *contracts.DBError
	)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "the database file does not exist"
	case errors.Is(err, fs.ErrPermission):
		return "the database file cannot be read (permission denied)"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "the database server refused the connection (nothing listens at its address)"
	case errors.As(err, &dns):
		return "the database server's host name does not resolve"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Sprintf("the database server did not answer within %s", OpenTimeout)
	case errors.As(err, &netOp):
		return "the database server cannot be reached (network error)"
	case errors.As(err, &dbErr):
		return fmt.Sprintf("the database refused the connection (%s); the executor's log has its message", dbErr.Class)
	}
	return "the database could not be opened; the executor's log has the driver's message"
}

// Descriptors returns the descriptors of the connections served, in file
// order: what Start publishes.
func (s *Service) Descriptors() []contracts.ConnectionDescriptor {
	out := make([]contracts.ConnectionDescriptor, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.conns[id].descriptor())
	}
	return out
}

// Exec runs one operation in process and answers as the NATS endpoint would:
// always a reply, never a panic or a Go error.
func (s *Service) Exec(ctx context.Context, op contracts.ExecOp, req contracts.ExecRequest) contracts.ExecReply {
	if !s.enter(false) {
		return stopping()
	}
	defer s.leave()
	return s.run(ctx, op, req)
}

// stopping answers a request that arrived after the executor stopped taking them.
func stopping() contracts.ExecReply {
	return failed(&contracts.DBError{Class: contracts.DBUnavailable,
		Message: "the executor is stopping; nothing reached the database"})
}

// enter counts one more operation in flight, unless the executor no longer
// takes it: after Stop began, only a request NATS delivered before the
// endpoints' interest ended (delivered) is still served, until the drain
// grace is over.
func (s *Service) enter(delivered bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.stopped && !delivered {
		return false
	}
	s.inflight.Add()
	return true
}

// leave counts one operation less in flight.
func (s *Service) leave() { s.inflight.Done() }

// run is Exec's work once the operation is counted in flight.
func (s *Service) run(ctx context.Context, op contracts.ExecOp, req contracts.ExecRequest) contracts.ExecReply {
	start := time.Now()
	// Stop cancels what is still running once its grace is over, and an
	// ExecCancel naming the operation's run and step cancels it at once.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.base, cancel)()
	defer s.ops.add(req.RunID, req.StepID, cancel)()

	reply := s.exec(ctx, op, &req)
	attrs := []any{"op", op, "connection", req.ConnectionID, "run", req.RunID, "step", req.StepID,
		"correlation", req.CorrelationID, "status", reply.Status, "duration_ms", time.Since(start).Milliseconds(),
		"db_ms", reply.DurationMs}
	switch {
	case reply.Refusal != nil:
		attrs = append(attrs, "code", reply.Refusal.Code)
	case reply.Error != nil:
		attrs = append(attrs, "class", reply.Error.Class)
	case reply.Artifact != nil:
		attrs = append(attrs, "rows", reply.Artifact.Rows, "bytes", reply.Artifact.Bytes)
	}
	s.log.InfoContext(ctx, "exec", attrs...)
	return reply
}

// exec does Exec's work; it may fill in req.CorrelationID.
func (s *Service) exec(ctx context.Context, op contracts.ExecOp, req *contracts.ExecRequest) contracts.ExecReply {
	served, ok := servedOps[op]
	if !ok {
		return refused(refuse.New(refuse.Unsupported,
			fmt.Sprintf("the %s executor does not serve the %q operation", s.engine, op),
			"use one of: "+opNames()))
	}
	srv, refusal := s.resolve(req)
	if refusal != nil {
		return refused(refusal)
	}
	eng, reason := srv.state()
	if eng == nil {
		return refused(unavailable(req.ConnectionID, reason))
	}
	prof, ok := profiles[req.Profile]
	switch {
	case req.Profile == contracts.ProfileAgentOperations && op != contracts.OpOperations:
		return refused(refuse.New(refuse.Unsupported,
			"the agent-operations profile runs curated readings, not statements", "run the read under agent-read-only"))
	case req.Profile == "":
		// No profile is the strictest one, and is recorded as such.
		req.Profile = contracts.ProfileAgentReadOnly
		prof = profiles[req.Profile]
	case !ok:
		return refused(refuse.New(refuse.BadRequest, fmt.Sprintf("unknown profile %q", req.Profile),
			"use agent-read-only, agent-handover or inspect"))
	}
	if served.free {
		// Nothing reaches the database: no slot, no artifact.
		return served.answer(s, ctx, opCall{op: op, eng: eng, req: req})
	}
	return s.operate(ctx, op, served, eng, prof, req)
}

// operate answers op on eng, the engine of an available connection, within
// a slot.
func (s *Service) operate(ctx context.Context, op contracts.ExecOp, served servedOp, eng engine.Engine, prof profile, req *contracts.ExecRequest) contracts.ExecReply {
	timeout := prof.deadline(*req)
	waited, reply, ok := s.acquire(ctx, timeout)
	if !ok {
		return reply
	}
	defer func() { <-s.sem }()
	if timeout > 0 {
		// The wait for a slot is part of the time the caller granted.
		timeout -= waited
	}
	if req.CorrelationID == "" {
		req.CorrelationID = newCorrelationID()
	}

	limits := prof.limits(*req)
	// A result is held while it is stored: it counts against the budget.
	limits.MaxBytes = int(min(int64(limits.MaxBytes), s.opts.OperationMemory))
	ereq := engine.Request{SQL: req.SQL, Params: req.Params, Schema: req.Schema, Table: req.Table, Profile: req.Profile,
		Limits: limits, Timeout: timeout, Failed: req.FailedFingerprints}
	return served.answer(s, ctx, opCall{op: op, eng: eng, req: req, ereq: ereq})
}

// stored answers a read of c whose result is res (plan, for a plan read):
// the failure err says, or the result stored as an artifact.
func (s *Service) stored(ctx context.Context, c opCall, res engine.Result, plan *contracts.PlanSummary, err error) contracts.ExecReply {
	op, eng, req := c.op, c.eng, c.req
	reply := contracts.ExecReply{DurationMs: res.Duration.Milliseconds(), Statements: res.Statements, Fingerprint: res.Fingerprint}
	if failure, failed := s.failure(ctx, op, eng, err, req, reply); failed {
		return failure
	}

	sum := res.Rows.Summary(req.CorrelationID)
	art := contracts.Artifact{
		ArtifactSummary: sum,
		RunID:           req.RunID,
		StepID:          req.StepID,
		ConnectionID:    req.ConnectionID,
		Profile:         req.Profile,
		SQL:             res.SQL,
		Data:            res.Rows.Rows,
	}
	if f, failed := s.put(ctx, art, reply); failed {
		return f
	}
	reply.Status, reply.Artifact = contracts.ExecOK, &sum
	reply.Plan, reply.Cells = plan, res.Rows.Cells()
	return reply
}

// failure turns the error of an operation on eng into its reply: a refusal
// (the guard's, a profile's bound), connection_unavailable when the
// database no longer answers (the connection is marked unavailable and
// opened again in the background), or a classified database error. The
// engine's text reaches the reply only where its class ties it to the
// statement (syntax, a missing object, a permission, …); a database that
// is unavailable, and an error nothing classified, are told in the
// executor's own words, the driver's text going to the log, since such text
// names hosts, ports, roles and file paths.
func (s *Service) failure(ctx context.Context, op contracts.ExecOp, eng engine.Engine, err error, req *contracts.ExecRequest, reply contracts.ExecReply) (contracts.ExecReply, bool) {
	var (
		ref      *contracts.Refusal
		tooLarge *rowset.TooLargeError
		dbErr    *contracts.DBError
	)
	switch {
	case err == nil:
		return reply, false
	case errors.As(err, &ref):
		reply.Status, reply.Refusal = contracts.ExecRefused, ref
		return reply, true
	case errors.As(err, &tooLarge):
		ref = tooLargeRefusal(op, tooLarge)
		reply.Status, reply.Refusal = contracts.ExecRefused, ref
		return reply, true
	case engine.MayBeLost(err) && s.confirmLost(ctx, eng):
		ref = s.lose(req.ConnectionID, eng, err)
		reply.Status, reply.Refusal = contracts.ExecRefused, ref
		return reply, true
	case !errors.As(err, &dbErr):
		s.log.Warn("an engine error with no class; its text stays in this log", "op", op,
			"connection", req.ConnectionID, "correlation", req.CorrelationID, "err", driverText(err))
		dbErr = &contracts.DBError{Class: contracts.DBOther,
			Message: "the engine failed the operation with an error it did not classify; the executor's log has its text"}
	case dbErr.Class == contracts.DBUnavailable || errors.Is(err, engine.ErrConnectionLost):
		s.log.Warn("the database answered, but failed the operation as unavailable; its text stays in this log", "op", op,
			"connection", req.ConnectionID, "correlation", req.CorrelationID, "err", driverText(err))
		dbErr = &contracts.DBError{Class: dbErr.Class,
			Message: "the connection to the database failed during the operation, though the database still answers; the executor's log has its text"}
	}
	reply.Status, reply.Error = contracts.ExecError, dbErr
	return reply, true
}

// probeSQL is the read that asks a database whether it still answers.
const probeSQL = "SELECT 1"

// probeTimeout bounds that read.
const probeTimeout = 5 * time.Second

// confirmLost reports whether eng's database no longer answers after an
// operation on it failed with an error engine.MayBeLost allowed: the
// executor reads probeSQL on eng once. So a statement's own failure that no
// class ties to it (a conversion DuckDB types as other) is not taken for a
// lost database, nor is a connection that broke and came back (an engine's
// ErrConnectionLost the probe disproves: the operation's time was spent, and
// it is charged as a failure); a lost database is known by its behaviour,
// not by the driver's text.
func (s *Service) confirmLost(ctx context.Context, eng engine.Engine) bool {
	if ctx.Err() != nil {
		return false // the caller gave up: a probe now would say nothing
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	_, perr := eng.Read(pctx, engine.Request{SQL: probeSQL, Profile: contracts.ProfileAgentReadOnly,
		Limits: rowset.Limits{MaxRows: 1, MaxBytes: 1 << 10}, Timeout: probeTimeout})
	var ref *contracts.Refusal
	switch {
	case perr == nil, errors.As(perr, &ref):
		return false
	case ctx.Err() != nil:
		return false
	}
	return true
}

// lose marks the connection connID unavailable after its engine eng found
// its database gone during an operation (err, kept for the log), and
// answers the operation's refusal. The engine is closed and the database
// opened again in the background, with a doubling wait, until it answers;
// the descriptor is published unavailable meanwhile. An operation that
// finds it already marked (another failed first, or it was opened again
// since eng) changes nothing.
func (s *Service) lose(connID string, eng engine.Engine, err error) *contracts.Refusal {
	srv := s.conns[connID]
	reason := "the database server stopped answering during the operation"
	if connections.FileEngine(s.engine) {
		reason = "the database file could no longer be read during the operation (removed, replaced or unreadable)"
	}
	srv.mu.Lock()
	if srv.engine != eng {
		if srv.engine == nil {
			reason = srv.reason
		}
		srv.mu.Unlock()
		return unavailable(connID, reason)
	}
	srv.engine, srv.reason = nil, reason
	srv.mu.Unlock()
	// The driver's text stays in this log: it may name a host, a port, a role or a path.
	s.log.Warn("connection lost; opening it again in the background", "connection", connID, "reason", reason, "err", driverText(err))
	s.retries.Add(1)
	go func() {
		// Closed before it is opened again: DuckDB shares one instance per file.
		eng.Close()
		s.publish(srv)
		s.keepOpening(srv)
	}()
	return unavailable(connID, reason)
}

// driverText is err's text for the log: a classified error's message,
// which DBError.Error leaves out.
func driverText(err error) string {
	var d *contracts.DBError
	if errors.As(err, &d) {
		return string(d.Class) + ": " + d.Message
	}
	return err.Error()
}

// unavailable is the refusal of an operation on connection connID while its
// database does not answer, for the neutral reason given.
func unavailable(connID, reason string) *contracts.Refusal {
	return refuse.New(contracts.RefuseConnectionUnavailable,
		fmt.Sprintf("connection %q is unavailable: %s; the executor keeps trying to open it", connID, reason),
		"check that the database is up and reachable, then retry; a running server shows the connection's state in GET /api/connections and sonde connections")
}

// put stores an artifact; a store that refuses it fails the operation.
func (s *Service) put(ctx context.Context, art contracts.Artifact, reply contracts.ExecReply) (contracts.ExecReply, bool) {
	store := s.store()
	if store == nil {
		return reply, false
	}
	if err := store.Put(ctx, art); err != nil {
		s.log.Error("store artifact", "correlation", art.CorrelationID, "err", err)
		f := failed(&contracts.DBError{Class: contracts.DBUnavailable,
			Message: "the result could not be stored as an artifact; retry the operation"})
		f.DurationMs, f.Statements = reply.DurationMs, reply.Statements
		return f, true
	}
	return reply, false
}

// catalogOp answers the operations served from the engine's catalog
// (OpSchema, OpInventory).
func (s *Service) catalogOp(ctx context.Context, op contracts.ExecOp, eng engine.Engine, req *contracts.ExecRequest, ereq engine.Request) contracts.ExecReply {
	if ref := selectionProblem(req); ref != nil {
		return refused(ref)
	}
	cat, ok := eng.(engine.Cataloger)
	if !ok {
		return refused(refuse.New(refuse.Unsupported,
			fmt.Sprintf("the %s executor cannot read its catalog yet", s.engine), "read the schema with a statement over the engine's catalog"))
	}
	var (
		art  contracts.Artifact
		inv  *contracts.Inventory
		page *contracts.SchemaPage
		cost engine.Catalog
		err  error
	)
	if op == contracts.OpInventory {
		art, inv, cost, err = s.inventory(ctx, cat, req, ereq)
	} else {
		art, page, cost, err = s.inspect(ctx, cat, req, ereq)
	}
	dur, statements, sql := catalogCost(cost)
	reply := contracts.ExecReply{DurationMs: dur.Milliseconds(), Statements: statements}
	if failure, failed := s.failure(ctx, op, eng, err, req, reply); failed {
		return failure
	}
	art.RunID, art.StepID, art.ConnectionID, art.Profile, art.SQL = req.RunID, req.StepID, req.ConnectionID, req.Profile, sql
	if b, err := json.Marshal(art.Data); err == nil {
		art.Bytes = len(b)
	}
	if f, failed := s.put(ctx, art, reply); failed {
		return f
	}
	sum := art.ArtifactSummary
	reply.Status, reply.Artifact, reply.Schema = contracts.ExecOK, &sum, page
	if inv != nil {
		if b, err := json.Marshal(inv); err == nil && len(b) <= inlineInventoryBytes || s.store() == nil {
			reply.Inventory = inv
		}
	}
	return reply
}

// checkOp answers OpCheck.
func (s *Service) checkOp(ctx context.Context, eng engine.Engine, req *contracts.ExecRequest) contracts.ExecReply {
	g, ok := eng.(engine.Guarded)
	if !ok {
		return refused(refuse.New(refuse.Unsupported,
			fmt.Sprintf("the %s executor cannot check a statement without running it", s.engine), ""))
	}
	chk, err := check(ctx, g, req.SQL)
	if failure, failed := s.failure(ctx, contracts.OpCheck, eng, err, req, contracts.ExecReply{}); failed {
		return failure
	}
	return contracts.ExecReply{Status: contracts.ExecOK, Check: chk}
}

// acquire takes one of the MaxConcurrentReads slots, waiting for one up to
// the busy wait and never more than half the statement's timeout, so the
// statement keeps time to run within what the caller granted. When no slot
// frees in time it answers executor_busy: nothing reached the database, and
// the caller may send the same request again.
func (s *Service) acquire(ctx context.Context, timeout time.Duration) (time.Duration, contracts.ExecReply, bool) {
	select {
	case s.sem <- struct{}{}:
		return 0, contracts.ExecReply{}, true
	default:
	}
	wait := max(s.busy, 0)
	if timeout > 0 {
		wait = min(wait, timeout/2)
	}
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(d)/2)
	}
	start := time.Now()
	t := time.NewTimer(max(wait, 0))
	defer t.Stop()
	select {
	case s.sem <- struct{}{}:
		return time.Since(start), contracts.ExecReply{}, true
	case <-ctx.Done():
		return 0, failed(&contracts.DBError{Class: contracts.DBCancelled,
			Message: "the operation was cancelled while it waited for a free slot; nothing reached the database"}), false
	case <-t.C:
	}
	return 0, refused(refuse.New(contracts.RefuseExecutorBusy,
		fmt.Sprintf("the executor was running its %d operations for the %s this one could wait; it did not reach the database",
			MaxConcurrentReads, wait.Round(time.Millisecond)),
		"retry shortly; the same request may be sent again")), false
}

// resolve checks the request's names and finds its connection.
func (s *Service) resolve(req *contracts.ExecRequest) (*served, *contracts.Refusal) {
	switch {
	case req.ConnectionID == "":
		return nil, refuse.New(refuse.BadRequest, "the request names no connection", "set connectionId")
	case req.RunID != "" && !contracts.ValidRunID(req.RunID):
		return nil, refuse.New(refuse.BadRequest, "the run id is not a valid token", "use letters, digits, '-' and '_'")
	case req.CorrelationID != "" && !artifacts.ValidCorrelationID(req.CorrelationID):
		return nil, refuse.New(refuse.BadRequest, "the correlation id is not a valid token",
			"use at most 64 letters, digits, '-' and '_', or leave it out to have one made")
	}
	srv, ok := s.conns[req.ConnectionID]
	if !ok {
		return nil, refuse.New(refuse.UnknownConnection,
			fmt.Sprintf("this executor serves no %s connection %q", s.engine, req.ConnectionID),
			"name a connection listed in sonde_connections with engine "+string(s.engine))
	}
	return srv, nil
}

func (s *Service) store() ArtifactStore {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.artifacts
}

func tooLargeRefusal(op contracts.ExecOp, e *rowset.TooLargeError) *contracts.Refusal {
	fix := "add a LIMIT, or aggregate (GROUP BY with count, sum, avg) so that fewer rows come back"
	if e.By == rowset.ByBytes {
		fix = "select fewer or narrower columns (substr(), length() of long text), add a LIMIT, or aggregate"
	}
	if op == contracts.OpSchema {
		fix = "name one table to narrow the schema read"
	}
	return refuse.New(refuse.ResultTooLarge, "the "+e.Error()+", the most this profile allows; no rows are shown", fix)
}

func refused(r *contracts.Refusal) contracts.ExecReply {
	return contracts.ExecReply{Status: contracts.ExecRefused, Refusal: r}
}

// failed answers with an error the executor itself raised (not engine text).
func failed(e *contracts.DBError) contracts.ExecReply {
	e.ByExecutor = true
	return contracts.ExecReply{Status: contracts.ExecError, Error: e}
}

func newCorrelationID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "c_" + hex.EncodeToString(b[:])
}

func (s *Service) closeEngines() {
	for _, srv := range s.conns {
		srv.mu.Lock()
		if srv.engine != nil {
			srv.engine.Close()
			srv.engine, srv.reason = nil, "the executor stopped"
		}
		srv.mu.Unlock()
	}
}
