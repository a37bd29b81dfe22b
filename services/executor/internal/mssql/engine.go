// Package mssql is the SQL Server engine of the executor (go-mssqldb).
//
// What holds a read to reading, outermost first:
//   - the guard's T-SQL reader (pkg/guard/mssql): one SELECT over readable
//     tables of this database, large tables bounded, no hints, no INTO, no
//     functions outside the allowlist; checked before anything is sent;
//   - the server's own reading: on the same session, SET SHOWPLAN_XML ON
//     compiles the text without running it, and the plan must show one
//     statement of type SELECT whose objects are held to the same rules;
//   - a snapshot transaction that is always rolled back, a statement
//     timeout from the context: when it ends, go-mssqldb sends SQL Server
//     an attention, which stops the statement at the server, and the
//     session is closed;
//   - the bytes one operation holds while it reads are bounded by its
//     memory share (engine.Options.OperationMemory): SET TEXTSIZE cuts large
//     values at the server, and the socket is metered (wire.go);
//   - every profile runs as the connection's least-privilege login
//     (agent_dsn when set, else dsn): SELECT on the readable schemas and
//     nothing else. That login, not this code, is the line; WriteCapable
//     says when it could write. See docs/executor-mssql.md.
package mssql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	guardmssql "github.com/sondehq/sonde/pkg/guard/mssql"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// MaxConns bounds the open connections of each of an engine's logins.
const MaxConns = 8

// DefaultOperationMemory is the most bytes one operation may hold while it
// reads when the executor gives no engine.Options.OperationMemory.
const DefaultOperationMemory = 64 << 20

// minTextSize is the least SET TEXTSIZE the engine sets: the server's own
// showplan documents must fit under it.
const minTextSize = 1 << 20

// sessionInit is what runs whenever a pooled session is handed out (after
// the driver's reset): identifiers in "…" are identifiers, no implicit
// transactions, this reader loses any deadlock with the application, and
// no large value longer than textSize bytes leaves the server.
func sessionInit(textSize int64) string {
	return "SET QUOTED_IDENTIFIER ON; SET ANSI_NULLS ON; SET IMPLICIT_TRANSACTIONS OFF; " +
		"SET DEADLOCK_PRIORITY LOW; SET NOCOUNT ON; SET XACT_ABORT ON; " +
		fmt.Sprintf("SET TEXTSIZE %d", textSize)
}

// textSize is the SET TEXTSIZE for an operation memory of opMem bytes.
func textSize(opMem int64) int64 {
	return min(max(opMem, minTextSize), math.MaxInt32)
}

// Engine reads one SQL Server database. It is safe for concurrent use.
type Engine struct {
	// l runs every profile: the connection's agent_dsn when it has one,
	// else its dsn.
	l *login
	// readable and large come from the connection; the login fills in its
	// catalog and default schema.
	readable []string
	large    map[string]string
	// opMem bounds what one operation holds while it reads.
	opMem int64
}

var (
	_ engine.Engine           = (*Engine)(nil)
	_ engine.PrivilegeChecker = (*Engine)(nil)
)

// login is one credential's pool and where its names resolve.
type login struct {
	db            *sql.DB
	conn          *connector
	catalog       string // DB_NAME()
	defaultSchema string // SCHEMA_NAME()
}

// Config is what Open needs.
type Config struct {
	// DSN is the connection's credential (sqlserver://… or ADO key=value).
	DSN string
	// AgentDSN is the least-privilege login for agent profiles; empty means DSN.
	AgentDSN string
	// Readable and LargeTables are the connection's guard policy.
	Readable    []string
	LargeTables map[string]string
	// OperationMemory bounds what one operation holds while it reads;
	// zero means DefaultOperationMemory.
	OperationMemory int64
}

// Open connects the login that runs every profile — AgentDSN when set (DSN
// is then not used at all), else DSN — and checks it can reach its
// database.
func Open(ctx context.Context, cfg Config) (*Engine, error) {
	dsn, which := cfg.DSN, "dsn"
	if cfg.AgentDSN != "" {
		dsn, which = cfg.AgentDSN, "agent_dsn"
	}
	if dsn == "" {
		return nil, errors.New("mssql: the connection has no dsn")
	}
	opMem := cfg.OperationMemory
	if opMem <= 0 {
		opMem = DefaultOperationMemory
	}
	l, err := openLogin(ctx, dsn, opMem)
	if err != nil {
		return nil, fmt.Errorf("mssql: %s: %w", which, err)
	}
	return &Engine{l: l, readable: cfg.Readable, large: cfg.LargeTables, opMem: opMem}, nil
}

// OpenConnection is the executor's engine.Opener for mssql connections.
func OpenConnection(ctx context.Context, c connections.Connection, o engine.Options) (engine.Engine, error) {
	return Open(ctx, Config{DSN: c.DSN, AgentDSN: c.AgentDSN, Readable: c.Readable, LargeTables: c.LargeTables,
		OperationMemory: o.OperationMemory})
}

func openLogin(ctx context.Context, dsn string, opMem int64) (*login, error) {
	conn, err := newConnector(dsn, sessionInit(textSize(opMem)), opMem)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(MaxConns)
	db.SetMaxIdleConns(MaxConns)
	db.SetConnMaxIdleTime(10 * time.Minute)
	l := &login{db: db, conn: conn}
	var snapshot sql.NullInt64
	err = db.QueryRowContext(ctx,
		"SELECT DB_NAME(), SCHEMA_NAME(), (SELECT snapshot_isolation_state FROM sys.databases WHERE database_id = DB_ID())").
		Scan(&l.catalog, &l.defaultSchema, &snapshot)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("mssql: open: %w", err)
	}
	// sys.databases shows the row to every login that can reach the
	// database; NULL means this login cannot see it, and the first read
	// reports the state instead.
	if snapshot.Valid && snapshot.Int64 != 1 {
		db.Close()
		return nil, fmt.Errorf("mssql: database %s does not allow snapshot isolation; run ALTER DATABASE [%s] SET ALLOW_SNAPSHOT_ISOLATION ON",
			l.catalog, strings.ReplaceAll(l.catalog, "]", "]]"))
	}
	return l, nil
}

// Close closes the login's connections.
func (e *Engine) Close() error { return e.l.db.Close() }

// Policy is the guard policy of a login: the connection's patterns and
// large tables, the login's database and default schema.
func (e *Engine) policy(l *login) guard.Policy {
	schema := l.defaultSchema
	if schema == "" {
		schema = "dbo"
	}
	return guard.Policy{Readable: e.readable, LargeTables: e.large, DefaultSchema: schema, Catalog: l.catalog}
}

// Read runs one guarded SELECT. Its error is a *contracts.Refusal (refused
// by the guard or by the server's plan), a *rowset.TooLargeError or a
// *contracts.DBError.
func (e *Engine) Read(ctx context.Context, req engine.Request) (engine.Result, error) {
	l := e.l
	pol := e.policy(l)
	st, ref := guard.Check(guardmssql.Reader{}, req.SQL, pol)
	if ref != nil {
		return engine.Result{}, ref
	}
	if ref := req.Repeated(st.Fingerprint()); ref != nil {
		return engine.Result{}, ref
	}
	res, err := e.run(ctx, l, req, st.Text, func(ctx context.Context, conn *sql.Conn) error {
		plan, err := showplan(ctx, conn, st.Text)
		if err != nil {
			return err
		}
		if ref := CheckPlan(plan, st, pol); ref != nil {
			return ref
		}
		return nil
	})
	res.Fingerprint = st.Fingerprint()
	return res, err
}

// showplan asks the server, on conn's session, for the estimated plan of
// text: SHOWPLAN_XML compiles every statement of the text and runs none.
// The setting is turned off again before the session is used; when that
// fails the session is not used again.
func showplan(ctx context.Context, conn *sql.Conn, text string) (plan *Plan, err error) {
	if _, err := conn.ExecContext(ctx, "SET SHOWPLAN_XML ON"); err != nil {
		return nil, err
	}
	defer func() {
		off, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, oerr := conn.ExecContext(off, "SET SHOWPLAN_XML OFF"); oerr != nil {
			err = errors.Join(err, errSessionBad, oerr)
		}
	}()
	rows, err := conn.QueryContext(ctx, batch(text))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var docs []string
	for {
		for rows.Next() {
			var doc string
			if err := rows.Scan(&doc); err != nil {
				return nil, err
			}
			docs = append(docs, doc)
		}
		if !rows.NextResultSet() {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	plan, err = ParsePlan(docs...)
	if err != nil {
		return nil, &contracts.DBError{Class: contracts.DBOther, Message: err.Error()}
	}
	return plan, nil
}

// errSessionBad marks a session that must not go back to the pool.
var errSessionBad = errors.New("mssql: session left in an unknown state")

// batch is the text as sent. go-mssqldb sends a text it takes for a
// procedure name as an RPC call, not as a batch (isProc: it reads
// SELECT*FROM"t".[a b] as one, since a space inside brackets does not
// count); a newline outside brackets ends that reading, so every text gets
// one at its end, where no bracket is open.
func batch(text string) string { return text + "\n" }

// quote writes s as a T-SQL Unicode string literal.
func quote(s string) string { return "N'" + strings.ReplaceAll(s, "'", "''") + "'" }

// run sends stmt on one session of l: check (when set) first, then the
// statement in a snapshot transaction that is always rolled back, its rows
// collected under the request's limits.
func (e *Engine) run(ctx context.Context, l *login, req engine.Request, stmt string,
	check func(context.Context, *sql.Conn) error) (res engine.Result, err error) {
	res.SQL = stmt
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	conn, err := l.db.Conn(ctx)
	if err != nil {
		return res, classify(ctx, err, req.Timeout)
	}
	sock := l.conn.socket(conn)
	defer func() { release(conn, err, sock) }()
	// A response that passed the operation's memory ends the operation as
	// too large, whatever error the driver made of the failed read.
	defer func() {
		var tooLarge *rowset.TooLargeError
		if sock == nil || !sock.tripped.Load() || errors.As(err, &tooLarge) {
			return
		}
		rows := 0
		if res.Rows != nil {
			rows = len(res.Rows.Rows)
		}
		res, err = truncated(res, req.Limits, &rowset.TooLargeError{By: rowset.ByBytes, Limit: int(min(e.opMem, math.MaxInt32)), Rows: rows})
	}()

	start := time.Now()
	defer func() { res.Duration = time.Since(start) }()
	if check != nil {
		if err := check(ctx, conn); err != nil {
			var ref *contracts.Refusal
			if errors.As(err, &ref) {
				return res, ref
			}
			return res, classify(ctx, err, req.Timeout)
		}
	}
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSnapshot})
	if err != nil {
		return res, classify(ctx, err, req.Timeout)
	}
	defer tx.Rollback() //nolint:errcheck // always rolled back; an ended transaction is fine
	res.Statements = 1
	rows, err := tx.QueryContext(ctx, batch(stmt))
	if err != nil {
		return res, classify(ctx, err, req.Timeout)
	}
	defer rows.Close()
	limit := textSize(e.opMem)
	convert := func(v any, dbType string) (any, error) {
		if sock != nil {
			sock.reset() // a row was taken off the response
		}
		if capValue(v, dbType, limit) {
			return nil, &rowset.TooLargeError{By: rowset.ByBytes, Limit: int(limit)}
		}
		return value(v, dbType)
	}
	set, err := rowset.Collect(rows, req.Limits, convert, nil)
	res.Rows = set
	if err != nil {
		var tooLarge *rowset.TooLargeError
		if errors.As(err, &tooLarge) {
			return truncated(res, req.Limits, tooLarge)
		}
		return res, classify(ctx, err, req.Timeout)
	}
	return res, nil
}

// truncated turns a value or response past the operation's memory into a
// truncated result under a truncating profile (inspect); other profiles get
// the *rowset.TooLargeError.
func truncated(res engine.Result, limits rowset.Limits, tooLarge *rowset.TooLargeError) (engine.Result, error) {
	if !limits.Truncate || res.Rows == nil {
		return res, tooLarge
	}
	res.Rows.Truncated, res.Rows.TruncatedBy = true, []string{rowset.ByBytes}
	return res, nil
}

// release hands a session back to the pool, or closes it when the
// statement did not end cleanly: a timeout, a cancellation, a session whose
// settings could not be restored, a value or response past the operation's
// memory (the driver stopped mid-response).
func release(conn *sql.Conn, err error, sock *meteredConn) {
	var de *contracts.DBError
	var tooLarge *rowset.TooLargeError
	bad := errors.Is(err, errSessionBad) || errors.As(err, &tooLarge) || sock != nil && sock.tripped.Load() ||
		errors.As(err, &de) && (de.Class == contracts.DBTimeout || de.Class == contracts.DBCancelled || de.Class == contracts.DBOther)
	if bad {
		// Raw returning driver.ErrBadConn makes database/sql close the
		// session instead of pooling it.
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	conn.Close()
}
