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
//   - every session pins, in its startup packet, the settings that change
//     how the server reads a statement or resolves its names
//     (standard_conforming_strings, search_path, role, row_security, …:
//     pinned), and each read checks the server still shows them;
//   - inside the transaction, before the statement, one catalog query
//     checks what the statement resolves to: the user-defined code its
//     names, its views' bodies, rules, policies and domains would run, and
//     the inheritance children and foreign tables it would read
//     (checkObjects, refused with the guard's vocabulary);
//   - no wire message over the operation's memory is read (a value too
//     large ends as *rowset.TooLargeError and closes that connection), and
//     a cancelled context sends PostgreSQL a cancel request, so the
//     statement stops at the server; one that does not stop is terminated
//     (deadline.go);
//   - a lost connection is engine.ErrConnectionLost, in words that name no
//     role, database, host or port (classify.go).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
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
	// reader is the guard's reader, told the server's version.
	reader pgguard.Reader
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
	version, err := checkPinned(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %s: %w", which, err)
	}
	e := &Engine{pool: pool, opMem: operationMemory(o), reader: pgguard.Reader{ServerVersion: version}}
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
	// Session defaults from the startup packet: they override the
	// database's and the role's own settings (ALTER DATABASE/ROLE … SET),
	// and RESET ALL and DISCARD ALL return to them, so a session is
	// read-only, and reads statements as the guard does, even between our
	// own transactions. Each read checks they held (checkSQL).
	for _, p := range pinned {
		for k := range cc.RuntimeParams {
			if strings.EqualFold(k, p.Name) {
				delete(cc.RuntimeParams, k)
			}
		}
		cc.RuntimeParams[p.Name] = p.Value
	}
	cc.RuntimeParams["default_transaction_read_only"] = "on"
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
		h := &stopHandler{inner: &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: cancelGrace}}
		h.delay.Store(int64(cancelGrace))
		pc.CustomData()[stopKey] = h
		return h
	}
	return cfg, nil
}

// cancelGrace is how long a cancelled statement has to stop at the server
// before the client closes the socket, unless a read's own deadline asks for
// less (stopGrace).
const cancelGrace = 3 * time.Second

// Pinned is a session setting the engine fixes in every connection's
// startup packet: Value is sent, and the session must show it back.
type Pinned struct{ Name, Value string }

// pinned are the settings that change how the server reads a statement's
// text or resolves its names, or what a read may run, each fixed to the
// value the guard reads with:
//
//   - standard_conforming_strings on and backslash_quote safe_encoding: a
//     backslash in '…' is a character, as the guard lexes it; off, '\' '
//     would end a string where the guard sees it go on (issue 17: a
//     subquery the guard read as a string literal);
//   - client_encoding UTF8: no client-only encoding (SJIS, BIG5, GBK) whose
//     multibyte characters end in a backslash or quote byte;
//   - search_path public: unqualified names resolve where the guard
//     resolves them;
//   - role none: a role setting (ALTER ROLE … SET role) would run every
//     read as another role;
//   - row_security off: a row-level security policy never runs; a read it
//     would filter fails instead (42501), so no policy function runs as
//     part of a read;
//   - transform_null_equals off: x = NULL stays the comparison the guard
//     read;
//   - DateStyle ISO, MDY, IntervalStyle postgres, bytea_output hex: date,
//     time and interval literals are read, and values written, in the form
//     the engine converts (values.go).
//
// default_transaction_read_only is set there too (Config), but is a layer
// of its own: BEGIN READ ONLY holds without it.
var pinned = []Pinned{
	{"standard_conforming_strings", "on"},
	{"backslash_quote", "safe_encoding"},
	{"client_encoding", "UTF8"},
	{"search_path", pgguard.DefaultSchema},
	{"role", "none"},
	{"row_security", "off"},
	{"transform_null_equals", "off"},
	{"DateStyle", "ISO, MDY"},
	{"IntervalStyle", "postgres"},
	{"bytea_output", "hex"},
}

// PinnedSettings returns the settings every session of the engine fixes in
// its startup packet, in the order they are checked.
func PinnedSettings() []Pinned { return slices.Clone(pinned) }

// newPool opens and pings the pool of dsn. Its errors name no role,
// database, host, port or connection string (the operator's log has the
// driver's own words): a dsn that does not parse, or a server that cannot
// be reached (engine.ErrConnectionLost).
func newPool(ctx context.Context, dsn string, o engine.Options) (*pgxpool.Pool, error) {
	cfg, err := Config(dsn, o)
	if err != nil {
		slog.Warn("postgres: the connection string does not parse", "error", err)
		return nil, errors.New("not a valid PostgreSQL connection string (the executor's log says why)")
	}
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		slog.Warn("postgres: the pool could not be made", "error", err)
		return nil, errors.New("the connection's pool could not be made (the executor's log says why)")
	}
	if err := p.Ping(ctx); err != nil {
		p.Close()
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			slog.Warn("postgres: the database could not be reached", "error", err)
		}
		return nil, classified(ctx, err)
	}
	return p, nil
}

// checkPinned proves, on one session of the new pool, that the server
// shows every pinned setting as the startup packet set it (a pooler in
// between may drop startup parameters): otherwise the connection does not
// open, since no read could run on it. It returns the server's
// server_version_num, which the guard's reader is told.
func checkPinned(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	c, err := pool.Acquire(ctx)
	if err != nil {
		return 0, classified(ctx, err)
	}
	defer c.Release()
	pc := c.Conn().PgConn()
	if ok, why := pinnedHeld(pc); !ok {
		return 0, why
	}
	names, values := []string{}, []string{}
	for _, p := range pinned {
		names, values = append(names, p.Name), append(values, p.Value)
	}
	var name, shown, want string
	var version int
	err = c.Conn().QueryRow(ctx, `SELECT coalesce(s.name, ''), coalesce(pg_catalog.current_setting(s.name, true), ''), coalesce(s.want, ''),
		pg_catalog.current_setting('server_version_num')::int
		FROM (SELECT 1) one LEFT JOIN (SELECT * FROM unnest($1::text[], $2::text[]) AS u(name, want)
		WHERE pg_catalog.current_setting(u.name, true) IS DISTINCT FROM u.want LIMIT 1) s ON true`,
		pgx.QueryExecModeExec, names, values).Scan(&name, &shown, &want, &version)
	if err != nil {
		return 0, classified(ctx, err)
	}
	if name != "" {
		return 0, unpinned(name, shown, want)
	}
	return version, nil
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
	res, err := e.runChecked(ctx, st.Text, req.Params, req, statementObjects(st, &uses))
	res.Fingerprint = st.Fingerprint()
	return res, err
}
