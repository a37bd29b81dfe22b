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
//     timeout from the context (go-mssqldb sends an attention on cancel);
//   - for the agent profiles, the connection's least-privilege login
//     (agent_dsn): SELECT on the readable schemas and nothing else. That
//     login, not this code, is the line; see docs/executor-mssql.md.
package mssql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	mssqldb "github.com/microsoft/go-mssqldb"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	guardmssql "github.com/sondehq/sonde/pkg/guard/mssql"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// MaxConns bounds the open connections of each of an engine's logins.
const MaxConns = 8

// sessionInit runs whenever a pooled session is handed out (after the
// driver's reset): identifiers in "…" are identifiers, no implicit
// transactions, and this reader loses any deadlock with the application.
const sessionInit = "SET QUOTED_IDENTIFIER ON; SET ANSI_NULLS ON; SET IMPLICIT_TRANSACTIONS OFF; " +
	"SET DEADLOCK_PRIORITY LOW; SET NOCOUNT ON; SET XACT_ABORT ON"

// Engine reads one SQL Server database. It is safe for concurrent use.
type Engine struct {
	owner *login // the connection's dsn: schema reads and the inspect profile
	agent *login // agent_dsn, for the agent profiles; owner when none is set
	// readable and large come from the connection; each login fills in its
	// own catalog and default schema.
	readable []string
	large    map[string]string
}

// login is one credential's pool and where its names resolve.
type login struct {
	db            *sql.DB
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
}

// Open connects every login of cfg and checks each can reach its database.
func Open(ctx context.Context, cfg Config) (*Engine, error) {
	owner, err := openLogin(ctx, cfg.DSN)
	if err != nil {
		return nil, err
	}
	e := &Engine{owner: owner, agent: owner, readable: cfg.Readable, large: cfg.LargeTables}
	if cfg.AgentDSN != "" {
		if e.agent, err = openLogin(ctx, cfg.AgentDSN); err != nil {
			owner.db.Close()
			return nil, fmt.Errorf("mssql: agent_dsn: %w", err)
		}
		if !strings.EqualFold(e.agent.catalog, owner.catalog) {
			e.Close()
			return nil, fmt.Errorf("mssql: agent_dsn reaches database %q, dsn reaches %q", e.agent.catalog, owner.catalog)
		}
	}
	return e, nil
}

// OpenConnection is the executor's engine.Opener for mssql connections.
func OpenConnection(ctx context.Context, c connections.Connection) (engine.Engine, error) {
	return Open(ctx, Config{DSN: c.DSN, AgentDSN: c.AgentDSN, Readable: c.Readable, LargeTables: c.LargeTables})
}

func openLogin(ctx context.Context, dsn string) (*login, error) {
	conn, err := mssqldb.NewConnector(dsn)
	if err != nil {
		return nil, fmt.Errorf("mssql: %w", err)
	}
	conn.SessionInitSQL = sessionInit
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(MaxConns)
	db.SetMaxIdleConns(MaxConns)
	db.SetConnMaxIdleTime(10 * time.Minute)
	l := &login{db: db}
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

// Close closes every login's connections.
func (e *Engine) Close() error {
	err := e.owner.db.Close()
	if e.agent != e.owner {
		err = errors.Join(err, e.agent.db.Close())
	}
	return err
}

// loginFor picks the credential of a profile: the least-privilege one for
// everything an agent sends.
func (e *Engine) loginFor(p contracts.Profile) *login {
	switch p {
	case contracts.ProfileAgentReadOnly, contracts.ProfileAgentHandover, contracts.ProfileAgentOperations:
		return e.agent
	}
	return e.owner
}

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
	l := e.loginFor(req.Profile)
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
	}, nil)
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

// batch is the text as sent. go-mssqldb sends a text with no whitespace,
// quote or parenthesis as a stored procedure call, not as a batch; a
// trailing newline keeps every text a batch.
func batch(text string) string {
	if strings.ContainsAny(text, " \t\r\n('") {
		return text
	}
	return text + "\n"
}

// SchemaSQL composes the catalog read of a schema operation: every column
// of every table and view the login may see, with its type, nullability and
// whether it is in the primary key, narrowed to schema and table when they
// are set.
func SchemaSQL(schema, table string) string {
	var b strings.Builder
	b.WriteString(`SELECT c.TABLE_SCHEMA AS table_schema, c.TABLE_NAME AS table_name, t.TABLE_TYPE AS table_type,
       c.COLUMN_NAME AS column_name, c.DATA_TYPE AS data_type, c.CHARACTER_MAXIMUM_LENGTH AS max_length,
       c.NUMERIC_PRECISION AS numeric_precision, c.NUMERIC_SCALE AS numeric_scale, c.IS_NULLABLE AS is_nullable,
       CASE WHEN EXISTS (SELECT 1 FROM INFORMATION_SCHEMA.TABLE_CONSTRAINTS tc
                           JOIN INFORMATION_SCHEMA.KEY_COLUMN_USAGE k
                             ON k.CONSTRAINT_SCHEMA = tc.CONSTRAINT_SCHEMA AND k.CONSTRAINT_NAME = tc.CONSTRAINT_NAME
                          WHERE tc.CONSTRAINT_TYPE = 'PRIMARY KEY' AND k.TABLE_SCHEMA = c.TABLE_SCHEMA
                            AND k.TABLE_NAME = c.TABLE_NAME AND k.COLUMN_NAME = c.COLUMN_NAME)
            THEN 'YES' ELSE 'NO' END AS primary_key
  FROM INFORMATION_SCHEMA.COLUMNS c
  JOIN INFORMATION_SCHEMA.TABLES t ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME
 WHERE c.TABLE_SCHEMA NOT IN ('sys', 'INFORMATION_SCHEMA')`)
	if schema != "" {
		b.WriteString("\n   AND c.TABLE_SCHEMA = " + quote(schema))
	}
	if table != "" {
		b.WriteString("\n   AND c.TABLE_NAME = " + quote(table))
	}
	b.WriteString("\n ORDER BY c.TABLE_SCHEMA, c.TABLE_NAME, c.ORDINAL_POSITION")
	return b.String()
}

// quote writes s as a T-SQL Unicode string literal.
func quote(s string) string { return "N'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Schema runs the catalog read SchemaSQL composes and keeps the rows of
// tables the connection may read. Errors as for Read.
func (e *Engine) Schema(ctx context.Context, req engine.Request) (engine.Result, error) {
	if strings.ContainsRune(req.Schema+req.Table, 0) {
		return engine.Result{}, guard.Refuse(contracts.RefuseBadRequest, "a schema or table name holds a NUL byte", "name the schema and table plainly")
	}
	l := e.loginFor(req.Profile)
	pol := e.policy(l)
	keep := func(row []any) bool {
		s, _ := row[0].(string)
		t, _ := row[1].(string)
		st := &guard.Statement{Scopes: []guard.Scope{{Tables: []guard.Table{{Schema: s, Name: t}}}}}
		pol := pol
		pol.LargeTables = nil
		return guard.Apply(st, pol) == nil
	}
	return e.run(ctx, l, req, SchemaSQL(req.Schema, req.Table), nil, keep)
}

// run sends stmt on one session of l: check (when set) first, then the
// statement in a snapshot transaction that is always rolled back, its rows
// collected under the request's limits. keep, when set, filters rows.
func (e *Engine) run(ctx context.Context, l *login, req engine.Request, stmt string,
	check func(context.Context, *sql.Conn) error, keep func([]any) bool) (res engine.Result, err error) {
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
	defer func() { release(conn, err) }()

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
	set, err := rowset.Collect(rows, req.Limits, value, keep)
	res.Rows = set
	if err != nil {
		var tooLarge *rowset.TooLargeError
		if errors.As(err, &tooLarge) {
			return res, err
		}
		return res, classify(ctx, err, req.Timeout)
	}
	return res, nil
}

// release hands a session back to the pool, or closes it when the
// statement did not end cleanly: a timeout, a cancellation, a session whose
// settings could not be restored.
func release(conn *sql.Conn, err error) {
	var de *contracts.DBError
	bad := errors.Is(err, errSessionBad) ||
		errors.As(err, &de) && (de.Class == contracts.DBTimeout || de.Class == contracts.DBCancelled || de.Class == contracts.DBOther)
	if bad {
		// Raw returning driver.ErrBadConn makes database/sql close the
		// session instead of pooling it.
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	conn.Close()
}
