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
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/artifacts"
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
// more is answered at once with an error of class resource.
const MaxConcurrentReads = 8

// Ops lists the operations this executor serves.
var Ops = []contracts.ExecOp{contracts.OpRead, contracts.OpSchema}

// ArtifactStore keeps full results; *artifacts.Store is the NATS one.
type ArtifactStore interface {
	Put(ctx context.Context, a contracts.Artifact) error
}

// Config configures a Service.
type Config struct {
	// Engine is the engine this executor serves; empty means sqlite.
	Engine contracts.Engine
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
}

// Service is a running executor of one engine. Exec is safe for concurrent use.
type Service struct {
	engine contracts.Engine
	name   string
	log    *slog.Logger
	conns  map[string]*served
	order  []string // connection ids, in file order
	sem    chan struct{}

	mu        sync.Mutex
	artifacts ArtifactStore
	resources *natsx.Resources
	svc       micro.Service
	nc        *nats.Conn
	stopped   bool
	inflight  sync.WaitGroup
	base      context.Context // ends when Stop begins
	cancel    context.CancelFunc
}

type served struct {
	conn   connections.Connection
	engine engine.Engine
}

// New opens every connection of cfg's engine read-only and checks it can be
// reached. It fails when one cannot be opened.
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
	base, cancel := context.WithCancel(context.Background())
	s := &Service{
		engine:    cfg.Engine,
		name:      ServiceName(cfg.Engine),
		log:       log.With("service", ServiceName(cfg.Engine)),
		conns:     map[string]*served{},
		sem:       make(chan struct{}, MaxConcurrentReads),
		artifacts: cfg.Artifacts,
		resources: cfg.Resources,
		base:      base,
		cancel:    cancel,
	}
	ctx, done := context.WithTimeout(context.Background(), 30*time.Second)
	defer done()
	for _, c := range cfg.Connections {
		if c.Engine != cfg.Engine {
			continue
		}
		if !connections.ValidID(c.ID) {
			s.closeEngines()
			return nil, fmt.Errorf("executor: connection id %q is not a valid id", c.ID)
		}
		if _, dup := s.conns[c.ID]; dup {
			s.closeEngines()
			return nil, fmt.Errorf("executor: connection %q declared twice", c.ID)
		}
		eng, err := open(ctx, c)
		if err != nil {
			s.closeEngines()
			return nil, fmt.Errorf("executor: connection %q: %w", c.ID, err)
		}
		s.conns[c.ID] = &served{conn: c, engine: eng}
		s.order = append(s.order, c.ID)
	}
	if len(s.conns) == 0 {
		s.log.Warn("no connection to serve", "engine", cfg.Engine)
	}
	return s, nil
}

// Descriptors returns the descriptors of the connections served, in file
// order: what Start publishes.
func (s *Service) Descriptors() []contracts.ConnectionDescriptor {
	out := make([]contracts.ConnectionDescriptor, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.conns[id].conn.Descriptor())
	}
	return out
}

// Exec runs one operation in process and answers as the NATS endpoint would:
// always a reply, never a panic or a Go error.
func (s *Service) Exec(ctx context.Context, op contracts.ExecOp, req contracts.ExecRequest) contracts.ExecReply {
	start := time.Now()
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return failed(&contracts.DBError{Class: contracts.DBUnavailable, Message: "the executor is stopping"})
	}
	s.inflight.Add(1)
	s.mu.Unlock()
	defer s.inflight.Done()
	// Stop cancels what is still running.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.base, cancel)()

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
	if op != contracts.OpRead && op != contracts.OpSchema {
		return refused(refuse.New(refuse.Unsupported,
			fmt.Sprintf("the %s executor does not serve the %q operation", s.engine, op),
			"use one of: read, schema"))
	}
	srv, refusal := s.resolve(req)
	if refusal != nil {
		return refused(refusal)
	}
	prof, ok := profiles[req.Profile]
	switch {
	case req.Profile == contracts.ProfileAgentOperations:
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
	select {
	case s.sem <- struct{}{}:
		defer func() { <-s.sem }()
	default:
		return failed(&contracts.DBError{Class: contracts.DBResource,
			Message: fmt.Sprintf("the executor is already running %d operations; retry in a moment", MaxConcurrentReads)})
	}
	if req.CorrelationID == "" {
		req.CorrelationID = newCorrelationID()
	}

	ereq := engine.Request{SQL: req.SQL, Params: req.Params, Schema: req.Schema, Table: req.Table, Profile: req.Profile,
		Limits: prof.limits(*req), Timeout: prof.deadline(*req), Failed: req.FailedFingerprints}
	var (
		res engine.Result
		err error
	)
	if op == contracts.OpRead {
		res, err = srv.engine.Read(ctx, ereq)
	} else {
		res, err = srv.engine.Schema(ctx, ereq)
	}
	reply := contracts.ExecReply{DurationMs: res.Duration.Milliseconds(), Statements: res.Statements, Fingerprint: res.Fingerprint}

	var (
		ref      *contracts.Refusal
		tooLarge *rowset.TooLargeError
		dbErr    *contracts.DBError
	)
	switch {
	case errors.As(err, &ref):
		reply.Status, reply.Refusal, reply.Text = contracts.ExecRefused, ref, renderRefusal(ref)
		return reply
	case errors.As(err, &tooLarge):
		ref = tooLargeRefusal(op, tooLarge)
		reply.Status, reply.Refusal, reply.Text = contracts.ExecRefused, ref, renderRefusal(ref)
		return reply
	case errors.As(err, &dbErr):
		reply.Status, reply.Error, reply.Text = contracts.ExecError, dbErr, renderError(req.ConnectionID, dbErr)
		return reply
	case err != nil:
		dbErr = &contracts.DBError{Class: contracts.DBOther, Message: err.Error()}
		reply.Status, reply.Error, reply.Text = contracts.ExecError, dbErr, renderError(req.ConnectionID, dbErr)
		return reply
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
	if store := s.store(); store != nil {
		if err := store.Put(ctx, art); err != nil {
			s.log.Error("store artifact", "correlation", req.CorrelationID, "err", err)
			f := failed(&contracts.DBError{Class: contracts.DBUnavailable,
				Message: "the result could not be stored as an artifact; retry the operation"})
			f.DurationMs, f.Statements = reply.DurationMs, reply.Statements
			return f
		}
	}
	reply.Status, reply.Artifact = contracts.ExecOK, &sum
	if op == contracts.OpSchema {
		reply.Text = renderSchema(req.ConnectionID, sum, res.Rows)
	} else {
		reply.Text = renderRows(req.ConnectionID, sum, res.Rows)
	}
	return reply
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
	return contracts.ExecReply{Status: contracts.ExecRefused, Refusal: r, Text: renderRefusal(r)}
}

// failed answers with an error the executor itself raised (not engine text).
func failed(e *contracts.DBError) contracts.ExecReply {
	return contracts.ExecReply{Status: contracts.ExecError, Error: e,
		Text: fmt.Sprintf("The executor could not run the statement (%s): %s.", e.Class, e.Message)}
}

func newCorrelationID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "c_" + hex.EncodeToString(b[:])
}

func (s *Service) closeEngines() {
	for _, srv := range s.conns {
		srv.engine.Close()
	}
}
