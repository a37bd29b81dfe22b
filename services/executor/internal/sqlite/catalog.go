package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/sondehq/sonde/pkg/guard"
	guardsqlite "github.com/sondehq/sonde/pkg/guard/sqlite"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// catalogRun is one Cataloger call: its connection, the record of what the
// authorizer denied, and what it sent.
type catalogRun struct {
	ctx      context.Context
	conn     *sql.Conn
	rec      *guardsqlite.Record
	out      *engine.Catalog
	isolated int // statements spent isolating undescribable relations
}

// catalog runs fn on a connection of the engine's pool — the file the path
// names now, the connection's limits, the request's timeout over the whole
// call — under catalogAuthorizer, and puts the connection back under the
// connection's own authorizer. Errors as for Read.
func (e *Engine) catalog(ctx context.Context, req engine.Request, out *engine.Catalog, fn func(*catalogRun) error) error {
	return e.composed(ctx, req, out, catalogAuthorizer, fn)
}

// composed is catalog under the authorizer auth builds: the catalog's, or
// an operational reading's (operations.go).
func (e *Engine) composed(ctx context.Context, req engine.Request, out *engine.Catalog,
	auth func(*guardsqlite.Record) sqlite.AuthorizerFn, fn func(*catalogRun) error) error {
	db, dbErr := e.current(ctx)
	if dbErr != nil {
		return dbErr
	}
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return classify(err, req.Timeout, "")
	}
	defer conn.Close()
	if err := setLimits(conn, e.valueLimit); err != nil {
		return classify(err, req.Timeout, "")
	}
	c := &catalogRun{ctx: ctx, conn: conn, rec: &guardsqlite.Record{}, out: out}
	if err := setAuthorizer(conn, auth(c.rec)); err != nil {
		return classify(err, req.Timeout, "")
	}
	// A pooled connection goes back under the connection's own policy.
	defer setAuthorizer(conn, guardsqlite.Authorizer(e.policy, nil))
	start := time.Now()
	err = fn(c)
	out.Duration = time.Since(start)
	var ce *catalogError
	if errors.As(err, &ce) {
		_, denied := c.rec.Denied()
		return classify(ce.err, req.Timeout, denied)
	}
	if err != nil {
		return classify(err, req.Timeout, "")
	}
	return nil
}

// catalogError is a statement's failure at the database, kept unclassified
// until the call ends so that isolate can tell a relation SQLite cannot
// describe from a failure of the call.
type catalogError struct{ err error }

func (e *catalogError) Error() string { return e.err.Error() }
func (e *catalogError) Unwrap() error { return e.err }

// query sends one composed statement and hands each row to scan. The
// connection's value limit is raised for the statement to MaxValueBytes, and
// past it to hold the JSON argument: what a catalog statement reads and
// binds is the catalog's text and the executor's own list of names, never
// the database's data.
func (c *catalogRun) query(stmt string, args []any, scan func(*sql.Rows) error) error {
	c.out.SQL = append(c.out.SQL, stmt)
	c.out.Statements++
	need := MaxValueBytes
	for _, a := range args {
		if s, ok := a.(string); ok {
			need = max(need, len(s)+1)
		}
	}
	prev, err := sqlite.Limit(c.conn, sqlite3.SQLITE_LIMIT_LENGTH, -1)
	if err != nil {
		return err
	}
	if need > prev {
		if _, err := sqlite.Limit(c.conn, sqlite3.SQLITE_LIMIT_LENGTH, need); err != nil {
			return err
		}
		defer sqlite.Limit(c.conn, sqlite3.SQLITE_LIMIT_LENGTH, prev)
	}
	rows, err := c.conn.QueryContext(c.ctx, stmt, args...)
	if err != nil {
		return &catalogError{err}
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return &catalogError{err}
		}
	}
	if err := rows.Err(); err != nil {
		return &catalogError{err}
	}
	return nil
}

// isolate reads names with read; when SQLite cannot compile what one of
// them needs (SQLITE_ERROR: a view over a dropped table, a module this build
// lacks; SQLITE_AUTH: a module doing what the authorizer denies) it reads
// their halves apart, and calls undescribable for each name that fails
// alone — or that was not read when MaxIsolationStatements ran out. Any
// other failure (timeout, cancellation, I/O) ends the call.
func (c *catalogRun) isolate(names []string, read func([]string) error, undescribable func(string)) error {
	err := read(names)
	if err == nil || !describeFailure(err) {
		return err
	}
	if len(names) == 1 || c.isolated >= MaxIsolationStatements {
		for _, n := range names {
			undescribable(n)
		}
		return nil
	}
	half := len(names) / 2
	for _, part := range [][]string{names[:half], names[half:]} {
		if c.isolated >= MaxIsolationStatements {
			for _, n := range part {
				undescribable(n)
			}
			continue
		}
		c.isolated++
		if err := c.isolate(part, read, undescribable); err != nil {
			return err
		}
	}
	return nil
}

// describeFailure reports an error that belongs to what was described, not
// to the call.
func describeFailure(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff
	return code == sqlite3.SQLITE_ERROR || code == sqlite3.SQLITE_AUTH
}

// catalogReadable are the system tables the engine's catalog statements
// read.
var catalogReadable = map[string]bool{"sqlite_master": true, "sqlite_stat1": true}

// catalogPragmas are the metadata pragmas the catalog statements call.
var catalogPragmas = map[string]bool{"table_info": true, "table_xinfo": true, "index_list": true,
	"index_xinfo": true, "foreign_key_list": true}

// catalogAuthorizer is the authorizer of the engine's own catalog
// statements (Relations, Describe), never of a model's or caller's: those
// run under the connection's policy. The statements are the engine's text
// with only names bound, and what they return is the engine's to filter, so
// they may read sqlite_schema and sqlite_stat1, call the metadata pragmas on
// any relation of main, and read tables — a virtual table's module reads
// its shadow tables when a pragma connects to it; nothing of them reaches
// the result. Everything else is held as a statement is: writes, DDL,
// ATTACH, other pragmas and functions off the allowlist are denied.
func catalogAuthorizer(rec *guardsqlite.Record) sqlite.AuthorizerFn {
	base := guardsqlite.StatementAuthorizer(guard.Policy{DefaultSchema: DefaultSchema}, rec, nil)
	return func(action sqlite.AuthorizerActionCode, arg1, arg2, db, via string) sqlite.AuthorizerReturnCode {
		switch action {
		case sqlite.AuthRead:
			if catalogReadable[foldASCII(arg1)] && (db == "" || db == DefaultSchema) {
				return sqlite.AuthorizerOK
			}
		case sqlite.AuthPragma:
			if catalogPragmas[foldASCII(arg1)] && (db == "" || db == DefaultSchema) {
				return sqlite.AuthorizerOK
			}
		}
		return base(action, arg1, arg2, db, via)
	}
}

// jsonNames is names as one JSON array, the parameter of a catalog
// statement.
func jsonNames(names []string) string {
	b, _ := json.Marshal(names) // strings always marshal
	return string(b)
}
