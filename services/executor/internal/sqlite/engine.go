// Package sqlite is the SQLite engine of the executor: it opens a database
// file so that SQLite itself holds it read-only, guards each statement, runs
// it under a deadline and collects its rows under a profile's bounds.
//
// What holds a connection read-only, outermost first:
//   - CheckRead: one statement, starting with SELECT or WITH, checked before
//     anything reaches SQLite (the driver would run every statement of a
//     multi-statement text);
//   - the authorizer (policy), installed on every connection this engine
//     opens, which SQLite consults while compiling: only reads compile;
//   - mode=ro: the file is opened read-only, so a write fails with
//     SQLITE_READONLY whatever compiled (never immutable=1, which would let
//     SQLite read a file another process changes as if it were constant);
//   - query_only and trusted_schema=OFF pragmas, and limits on the length of
//     values and statements and on attached databases.
package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// MaxConns bounds the open connections (and so the concurrent statements) of
// one engine.
const MaxConns = 8

// Per-connection limits (sqlite3_limit).
const (
	maxValueBytes = 32 << 20 // longest string or BLOB a statement may build or read
	maxSQLBytes   = 1 << 20  // longest statement text
)

// Engine reads one SQLite database file. It is safe for concurrent use.
type Engine struct {
	db *sql.DB
}

// Open opens the database file at path read-only and checks that it is a
// SQLite database. The engine's connections come from a driver of its own,
// so the authorizer installed on them applies to nothing else in the process.
func Open(ctx context.Context, path string) (*Engine, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("sqlite: %s is not a regular file", abs)
	}
	drv := &sqlite.Driver{}
	drv.RegisterConnectionHook(func(conn sqlite.ExecQuerierContext, _ string) error {
		reg, ok := conn.(sqlite.AuthorizerRegisterer)
		if !ok {
			return errors.New("sqlite: the driver offers no authorizer")
		}
		return reg.RegisterAuthorizer(policy(nil))
	})
	db := sql.OpenDB(connector{drv: drv, dsn: dsn(abs)})
	db.SetMaxOpenConns(MaxConns)
	db.SetMaxIdleConns(MaxConns)
	db.SetConnMaxIdleTime(10 * time.Minute)

	e := &Engine{db: db}
	// Reading the catalog proves the file is a database we can open.
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}
	return e, nil
}

// dsn is the URI the driver opens: read-only, never immutable.
func dsn(abs string) string {
	q := url.Values{}
	q.Set("mode", "ro")
	q["_pragma"] = []string{"query_only(1)", "trusted_schema(0)", "busy_timeout(2000)"}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	return u.String()
}

// connector opens connections with the engine's own driver.
type connector struct {
	drv *sqlite.Driver
	dsn string
}

func (c connector) Connect(ctx context.Context) (driver.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.drv.Open(c.dsn)
}

func (c connector) Driver() driver.Driver { return c.drv }

// Close closes the engine's connections.
func (e *Engine) Close() error { return e.db.Close() }

// Result is what one operation sent to SQLite and what came back.
type Result = engine.Result

// Read runs one guarded SELECT. Its error is a *contracts.Refusal (refused
// before execution), a *rowset.TooLargeError (the result passed a bound of a
// refusing profile) or a *contracts.DBError (the database failed it). A
// non-positive timeout means no deadline.
func (e *Engine) Read(ctx context.Context, req engine.Request) (Result, error) {
	stmt, refusal := CheckRead(req.SQL)
	if refusal != nil {
		return Result{}, refusal
	}
	return e.run(ctx, stmt, req.Limits, req.Timeout)
}

// SchemaSQL composes the catalog read of a schema operation: every object's
// type, name, table and DDL, SQLite's internal objects left out, narrowed to
// one table (case-insensitively, as SQLite names are) when table is not empty.
func SchemaSQL(table string) string {
	var b strings.Builder
	b.WriteString("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")
	if table != "" {
		b.WriteString(" AND tbl_name = ")
		b.WriteString(quote(table))
		b.WriteString(" COLLATE NOCASE")
	}
	b.WriteString(" ORDER BY tbl_name COLLATE NOCASE, CASE type WHEN 'table' THEN 0 WHEN 'view' THEN 1 WHEN 'index' THEN 2 ELSE 3 END, name")
	return b.String()
}

// quote writes s as an SQL string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Schema runs the catalog read SchemaSQL composes. Errors as for Read.
func (e *Engine) Schema(ctx context.Context, req engine.Request) (Result, error) {
	if req.Schema != "" && req.Schema != "main" {
		return Result{}, &contracts.Refusal{Code: contracts.RefuseUnsupported,
			Reason: fmt.Sprintf("a SQLite connection has one schema, main; there is no schema %q", req.Schema),
			Fix:    "leave the schema out, or name a table"}
	}
	return e.run(ctx, SchemaSQL(req.Table), req.Limits, req.Timeout)
}

// OpenConnection is the executor's engine.Opener for sqlite connections.
func OpenConnection(ctx context.Context, c connections.Connection) (engine.Engine, error) {
	return Open(ctx, c.Path)
}

func (e *Engine) run(ctx context.Context, stmt string, limits rowset.Limits, timeout time.Duration) (res Result, err error) {
	res.SQL = stmt
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return res, classify(err, timeout, "")
	}
	defer conn.Close()

	var denied denial
	if err := prepareConn(conn, &denied); err != nil {
		return res, classify(err, timeout, "")
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}

	start := time.Now()
	defer func() { res.Duration = time.Since(start) }()
	res.Statements = 1
	rows, err := conn.QueryContext(ctx, stmt)
	if err != nil {
		return res, classify(err, timeout, denied.get())
	}
	defer rows.Close()

	cols, err := rows.ColumnTypes()
	if err != nil {
		return res, classify(err, timeout, denied.get())
	}
	columns := make([]contracts.Column, len(cols))
	for i, c := range cols {
		columns[i] = contracts.Column{Name: c.Name(), Type: c.DatabaseTypeName()}
	}
	set := rowset.New(columns, limits)
	res.Rows = set

	raw := make([]any, len(cols))
	dest := make([]any, len(cols))
	for i := range raw {
		dest[i] = &raw[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return res, classify(err, timeout, denied.get())
		}
		row := make([]any, len(raw))
		for i, v := range raw {
			if row[i], err = rowset.Value(v); err != nil {
				return res, classify(fmt.Errorf("row %d, column %q: %w", len(set.Rows)+1, columns[i].Name, err), timeout, "")
			}
		}
		more, err := set.Add(row)
		if err != nil {
			var tooLarge *rowset.TooLargeError
			if errors.As(err, &tooLarge) {
				return res, err
			}
			return res, classify(err, timeout, "")
		}
		if !more {
			return res, nil
		}
	}
	if err := rows.Err(); err != nil {
		return res, classify(err, timeout, denied.get())
	}
	if err := rows.Close(); err != nil {
		return res, classify(err, timeout, denied.get())
	}
	return res, nil
}

// prepareConn readies a pooled connection for one statement: the authorizer
// again, now recording into rec, and the limits.
func prepareConn(conn *sql.Conn, rec *denial) error {
	err := conn.Raw(func(dc any) error {
		reg, ok := dc.(sqlite.AuthorizerRegisterer)
		if !ok {
			return fmt.Errorf("sqlite: connection %T offers no authorizer", dc)
		}
		return reg.RegisterAuthorizer(policy(rec))
	})
	if err != nil {
		return err
	}
	for _, l := range []struct{ id, v int }{
		{sqlite3.SQLITE_LIMIT_LENGTH, maxValueBytes},
		{sqlite3.SQLITE_LIMIT_SQL_LENGTH, maxSQLBytes},
		{sqlite3.SQLITE_LIMIT_ATTACHED, 0},
	} {
		if _, err := sqlite.Limit(conn, l.id, l.v); err != nil {
			return err
		}
	}
	return nil
}
