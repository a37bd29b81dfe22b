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
//   - agent profiles run as the connection's agent_dsn role when it has one:
//     a role that can read only what the operator granted
//     (docs/executor-postgres.md).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	pgguard "github.com/sondehq/sonde/pkg/guard/postgres"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// MaxConns bounds the connections of each of an engine's pools.
const MaxConns = 8

// Engine serves one PostgreSQL connection. It is safe for concurrent use.
type Engine struct {
	owner  *pgxpool.Pool // the connection's dsn: inspect reads
	agent  *pgxpool.Pool // agent_dsn, or owner when there is none
	policy guard.Policy
}

var _ engine.Engine = (*Engine)(nil)

// OpenConnection is the engine.Opener of PostgreSQL connections.
func OpenConnection(ctx context.Context, c connections.Connection) (engine.Engine, error) {
	return New(ctx, c)
}

// New opens the pools of c (its dsn, and its agent_dsn when set) and proves
// each can reach the database.
func New(ctx context.Context, c connections.Connection) (*Engine, error) {
	if c.DSN == "" {
		return nil, errors.New("postgres: the connection has no dsn")
	}
	owner, err := newPool(ctx, c.DSN)
	if err != nil {
		return nil, fmt.Errorf("postgres: dsn: %w", err)
	}
	e := &Engine{owner: owner, agent: owner}
	if c.AgentDSN != "" {
		if e.agent, err = newPool(ctx, c.AgentDSN); err != nil {
			owner.Close()
			return nil, fmt.Errorf("postgres: agent_dsn: %w", err)
		}
	}
	e.policy = guard.Policy{
		Readable:      c.Readable,
		LargeTables:   c.LargeTables,
		DefaultSchema: pgguard.DefaultSchema,
		Catalog:       owner.Config().ConnConfig.Database,
	}
	return e, nil
}

// Config parses dsn into the pool configuration every pool of this engine
// uses: the extended protocol only, read-only sessions, a search path that
// matches the guard's default schema.
func Config(dsn string) (*pgxpool.Config, error) {
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
	return cfg, nil
}

func newPool(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	cfg, err := Config(dsn)
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

// Close closes the engine's pools.
func (e *Engine) Close() error {
	if e.agent != e.owner {
		e.agent.Close()
	}
	e.owner.Close()
	return nil
}

// pool is the pool a profile runs on: the agent's for agent profiles.
func (e *Engine) pool(p contracts.Profile) *pgxpool.Pool {
	if p == contracts.ProfileInspect {
		return e.owner
	}
	return e.agent
}

// Check guards one statement under the connection's policy.
func (e *Engine) Check(sql string) (*guard.Statement, *contracts.Refusal) {
	return guard.Check(pgguard.Reader{}, sql, e.policy)
}

// Read guards req.SQL and runs what passes, the text as sent without
// trailing semicolons, with req.Params bound separately.
func (e *Engine) Read(ctx context.Context, req engine.Request) (engine.Result, error) {
	st, ref := e.Check(req.SQL)
	if ref != nil {
		return engine.Result{}, ref
	}
	if ref := req.Repeated(st.Fingerprint()); ref != nil {
		return engine.Result{}, ref
	}
	res, err := e.run(ctx, e.pool(req.Profile), st.Text, req.Params, req)
	res.Fingerprint = st.Fingerprint()
	return res, err
}
