// Package postgres is the PostgreSQL engine of the executor. It guards each
// statement (pkg/guard/postgres, then the connection's readable and
// large-table rules) and runs what passes so that PostgreSQL itself holds
// the line:
//
//   - every statement goes over the extended protocol (pgx's
//     QueryExecModeDescribeExec), which runs exactly one statement: a
//     stacked COMMIT; INSERT … is refused by the server with 42601 even if it
//     got past the guard. Nothing here ever uses the simple protocol, not
//     even for BEGIN or ROLLBACK (pgx's Exec without arguments would);
//   - each read runs inside BEGIN READ ONLY, on sessions whose
//     default_transaction_read_only is on from the startup packet, with
//     SET LOCAL statement_timeout set to the granted timeout, and is always
//     rolled back;
//   - the session is reset (DISCARD ALL) before the connection goes back to
//     the pool; a connection that fails any of this is closed, never reused;
//   - every profile runs as the connection's agent_dsn role when it has one:
//     a role that can read only what the operator granted
//     (docs/executor-postgres.md); WriteCapable says when the role that
//     runs reads could write;
//   - inside the transaction, before the statement, the names it calls are
//     looked up in the server's catalog: a user-defined function or
//     operator of one of those names is refused (checkUses);
//   - no wire message over the operation's memory is read (a value too
//     large ends as *rowset.TooLargeError and closes that connection), and
//     a cancelled context sends PostgreSQL a cancel request, so the
//     statement stops at the server.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sondehq/sonde/pkg/guard"
	pgguard "github.com/sondehq/sonde/pkg/guard/postgres"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// MaxConns bounds the connections of each of an engine's pools.
const MaxConns = 8

// DefaultOperationMemory is the most bytes one wire message may hold when
// the executor gives no engine.Options.OperationMemory.
const DefaultOperationMemory = 64 << 20

// Engine serves one PostgreSQL connection. It is safe for concurrent use.
type Engine struct {
	// pool runs every profile: the connection's agent_dsn when it has one,
	// else its dsn.
	pool   *pgxpool.Pool
	policy guard.Policy
	// opMem bounds one wire message (engine.Options.OperationMemory).
	opMem int64
}

var _ engine.Engine = (*Engine)(nil)

// OpenConnection is the engine.Opener of PostgreSQL connections.
func OpenConnection(ctx context.Context, c connections.Connection, o engine.Options) (engine.Engine, error) {
	return New(ctx, c, o)
}

// New opens the pool of c and proves it can reach the database. Every
// profile runs as the connection's least-privilege role: its agent_dsn when
// set (the dsn is then not used at all), else its dsn.
func New(ctx context.Context, c connections.Connection, o engine.Options) (*Engine, error) {
	dsn, which := c.DSN, "dsn"
	if c.AgentDSN != "" {
		dsn, which = c.AgentDSN, "agent_dsn"
	}
	if dsn == "" {
		return nil, errors.New("postgres: the connection has no dsn")
	}
	pool, err := newPool(ctx, dsn, o)
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", which, err)
	}
	e := &Engine{pool: pool, opMem: operationMemory(o)}
	e.policy = guard.Policy{
		Readable:      c.Readable,
		LargeTables:   c.LargeTables,
		DefaultSchema: pgguard.DefaultSchema,
		Catalog:       pool.Config().ConnConfig.Database,
	}
	return e, nil
}

func operationMemory(o engine.Options) int64 {
	if o.OperationMemory > 0 {
		return o.OperationMemory
	}
	return DefaultOperationMemory
}

// Config parses dsn into the pool configuration every pool of this engine
// uses: the extended protocol only, read-only sessions, a search path that
// matches the guard's default schema, no wire message larger than the
// operation's memory, and cancel requests when a context ends.
func Config(dsn string, o engine.Options) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = MaxConns
	cfg.MaxConnIdleTime = 5 * time.Minute
	cc := cfg.ConnConfig
	// DescribeExec: an unnamed statement is parsed and described, then bound
	// and executed. No statement cache that DISCARD ALL could invalidate, and
	// never the simple protocol.
	cc.DefaultQueryExecMode = pgx.QueryExecModeDescribeExec
	cc.StatementCacheCapacity = 0
	cc.DescriptionCacheCapacity = 0
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	// Session defaults from the startup packet: RESET ALL and DISCARD ALL
	// return to these, so a session is read-only even between our own
	// transactions.
	cc.RuntimeParams["default_transaction_read_only"] = "on"
	cc.RuntimeParams["search_path"] = pgguard.DefaultSchema
	if cc.RuntimeParams["application_name"] == "" {
		cc.RuntimeParams["application_name"] = "sonde-executor"
	}
	// A DataRow over this is refused from its header, before its body is
	// read: the bytes are bounded while reading, not after.
	cc.MaxProtocolMessageBodyLen = int(min(operationMemory(o), math.MaxInt32))
	// A context that ends sends the server a cancel request, so the
	// statement stops there too; the socket's deadline follows only if the
	// server does not answer in time.
	cc.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: cancelGrace}
	}
	return cfg, nil
}

// cancelGrace is how long a cancelled statement has to stop at the server
// before the client closes the socket.
const cancelGrace = 3 * time.Second

func newPool(ctx context.Context, dsn string, o engine.Options) (*pgxpool.Pool, error) {
	cfg, err := Config(dsn, o)
	if err != nil {
		return nil, err
	}
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := p.Ping(ctx); err != nil {
		p.Close()
		d := classify(ctx, err)
		return nil, fmt.Errorf("%w: %s", d, d.Message)
	}
	return p, nil
}

// Close closes the engine's pool.
func (e *Engine) Close() error {
	e.pool.Close()
	return nil
}

// Read guards req.SQL and runs what passes, the text as sent without
// trailing semicolons, with req.Params bound separately.
func (e *Engine) Read(ctx context.Context, req engine.Request) (engine.Result, error) {
	// One parse serves the guard's rules and the catalog check of what the
	// statement calls; a plan passes the same gate (plan.go).
	st, uses, ref := e.guarded(req)
	if ref != nil {
		return engine.Result{}, ref
	}
	res, err := e.runChecked(ctx, st.Text, req.Params, req, &uses)
	res.Fingerprint = st.Fingerprint()
	return res, err
}
