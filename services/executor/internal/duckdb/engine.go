// Package duckdb is the DuckDB engine of the executor: it opens a database
// file so that DuckDB itself holds it read-only, guards each statement with
// DuckDB's own parser, runs it under a deadline and collects its rows under a
// profile's bounds. It uses github.com/duckdb/duckdb-go/v2, the maintained
// successor of github.com/marcboeker/go-duckdb.
//
// What holds a connection read-only, outermost first:
//   - the guard (pkg/guard/duckdb): one SELECT, as json_serialize_sql reads
//     it, with only range, generate_series and unnest as table functions, an
//     allowlist of functions, and the connection's readable tables and
//     large-table bounds (guard.Apply);
//   - DuckDB's own prepare of the text: exactly one statement, of type SELECT;
//   - the instance's settings, locked before the first statement:
//     access_mode=READ_ONLY (every write fails), enable_external_access=false
//     (no file, network, ATTACH, COPY, INSTALL or LOAD), no extension
//     autoloading or autoinstalling, no temporary directory (temp_directory
//     is empty: nothing spills, next to the file or anywhere), a memory
//     limit and few threads.
//
// Memory while reading: the instance's memory_limit comes from the
// executor's per-operation memory (engine.Options.OperationMemory) times the
// engine's connections, at least MinMemoryLimit. DuckDB's limit holds what
// its buffer manager allocates (hash tables, sorts, aggregates); a statement
// that needs more is refused result_too_large. It does not hold a long
// string, nor a result: the driver materialises the whole result, outside
// the limit, before the first row reaches Go. So the guard holds every value
// a statement builds to a size it states (repeat, lpad, printf widths, …) to
// guardduckdb.MaxBuiltValue, and a read runs wrapped so that DuckDB itself
// stops one row past the row bound and empties the rows past about twice
// the byte bound (bounded.go); rowset's bounds then hold what is read.
//
// Each operation checks that the path still names the file the instance
// opened: a replaced file is reopened, a deleted one fails as unavailable.
// A cancelled context interrupts the running statement (the driver calls
// duckdb_interrupt).
package duckdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	guardduckdb "github.com/sondehq/sonde/pkg/guard/duckdb"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// MaxConns bounds the open connections (and so the concurrent statements) of
// one engine.
const MaxConns = 8

// Settings are the instance settings every engine opens its file with. They
// are locked (lock_configuration) before the first statement runs.
var Settings = []struct{ Name, Value string }{
	{"access_mode", "READ_ONLY"},
	{"autoload_known_extensions", "false"},
	{"autoinstall_known_extensions", "false"},
	{"allow_community_extensions", "false"},
	{"memory_limit", "512MB"}, // without engine.Options.OperationMemory
	{"threads", "2"},
	{"max_temp_directory_size", "0B"},
}

// Locked are the settings openDB sets by statement, in this order, before it
// locks the configuration, and checks once it has.
//
// No spilling: DuckDB's default temp_directory is <file>.tmp beside the
// database, which max_temp_directory_size = 0 does not keep it from
// creating (issue 17, item 6). An empty temp_directory turns spilling off;
// a statement that needs more than memory_limit fails as too large instead.
// The driver's DSN cannot carry an empty value, and with external access off
// the directory can no longer be changed, so external access is turned off
// by statement after it (before any statement of a caller's runs).
var Locked = []struct{ Name, Value string }{
	{"temp_directory", ""},
	{"enable_external_access", "false"},
}

// MinMemoryLimit is the smallest memory_limit an instance opens with.
const MinMemoryLimit = 64 << 20

// Engine reads one DuckDB database file. It is safe for concurrent use.
type Engine struct {
	path   string // absolute
	dsn    string
	guard  *guardduckdb.Reader
	policy guard.Policy
	limit  int64 // the instance's memory_limit, in bytes

	mu     sync.Mutex
	db     *sql.DB     // nil while a replaced file could not be opened
	ident  os.FileInfo // the file db's instance opened
	closed bool
}

// Open opens the database file at path read-only with the locked settings,
// and the guard's parser beside it. readable and large are the connection's
// table patterns and large-table bounds.
func Open(ctx context.Context, path string, readable []string, large map[string]string) (*Engine, error) {
	return OpenWith(ctx, path, readable, large, engine.Options{})
}

// MemoryLimit is the memory_limit, in bytes, an instance opens with under o.
func MemoryLimit(o engine.Options) int64 {
	if o.OperationMemory <= 0 {
		return 512 << 20
	}
	return max(o.OperationMemory*MaxConns, MinMemoryLimit)
}

// OpenWith is Open with the executor's options: the instance's memory_limit
// is MemoryLimit(o).
func OpenWith(ctx context.Context, path string, readable []string, large map[string]string, o engine.Options) (*Engine, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("duckdb: %w", err)
	}
	if strings.ContainsAny(abs, "?#") {
		// The driver reads settings after the first '?' of the DSN.
		return nil, fmt.Errorf("duckdb: the path %s holds '?' or '#'; rename the file", abs)
	}
	q := url.Values{}
	for _, s := range Settings {
		q.Set(s.Name, s.Value)
	}
	q.Set("memory_limit", fmt.Sprintf("%dB", MemoryLimit(o)))
	e := &Engine{path: abs, dsn: abs + "?" + q.Encode(), limit: MemoryLimit(o)}
	db, ident, catalog, err := e.openDB(ctx)
	if err != nil {
		return nil, err
	}
	reader, err := guardduckdb.New()
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("duckdb: open %s: %w", abs, err)
	}
	e.db, e.ident, e.guard = db, ident, reader
	e.policy = guard.Policy{Readable: readable, LargeTables: large, DefaultSchema: "main", Catalog: catalog}
	return e, nil
}

// openDB opens an instance on the engine's file, locks its configuration
// and names its catalog.
func (e *Engine) openDB(ctx context.Context) (*sql.DB, os.FileInfo, string, error) {
	abs := e.path
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, nil, "", fmt.Errorf("duckdb: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, "", fmt.Errorf("duckdb: %s is not a regular file", abs)
	}
	connector, err := duckdb.NewConnector(e.dsn, nil)
	if err != nil {
		return nil, nil, "", fmt.Errorf("duckdb: open %s: %w", abs, err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(MaxConns)
	db.SetMaxIdleConns(MaxConns)
	db.SetConnMaxIdleTime(10 * time.Minute)
	fail := func(err error) (*sql.DB, os.FileInfo, string, error) {
		db.Close()
		return nil, nil, "", fmt.Errorf("duckdb: open %s: %w", abs, err)
	}
	// Lock the configuration: from here on no statement can change a setting.
	// The driver shares one instance per file within a process, which may
	// already be locked by another engine on the same file.
	var locked bool
	if err := db.QueryRowContext(ctx, "SELECT current_setting('lock_configuration')").Scan(&locked); err != nil {
		return fail(err)
	}
	if !locked {
		for _, l := range Locked {
			if _, err := db.ExecContext(ctx, fmt.Sprintf("SET %s = '%s'", l.Name, l.Value)); err != nil {
				return fail(err)
			}
		}
		if _, err := db.ExecContext(ctx, "SET lock_configuration = true"); err != nil {
			return fail(err)
		}
	}
	for _, l := range Locked {
		var v string
		if err := db.QueryRowContext(ctx, "SELECT current_setting($1)::VARCHAR", l.Name).Scan(&v); err != nil {
			return fail(err)
		}
		if v != l.Value {
			return fail(fmt.Errorf("the instance's %s is %q, not %q", l.Name, v, l.Value))
		}
	}
	// Reading the catalog proves the file is a database we can open, and
	// names the connection's own catalog.
	var catalog string
	if err := db.QueryRowContext(ctx, "SELECT current_database()").Scan(&catalog); err != nil {
		return fail(err)
	}
	return db, fi, catalog, nil
}

// current returns the instance on the file the path names now. When another
// file was put in its place the old instance is closed — once its running
// statements end — and the new file opened (the driver shares one instance
// per path, so the old one must go first). A path that names no file
// (deleted, moved) fails as unavailable.
func (e *Engine) current(ctx context.Context) (*sql.DB, *contracts.DBError) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fi, err := os.Stat(e.path)
	switch {
	case e.closed:
		return nil, &contracts.DBError{Class: contracts.DBUnavailable, Message: "the connection is closed"}
	case errors.Is(err, os.ErrNotExist):
		return nil, &contracts.DBError{Class: contracts.DBUnavailable, Message: fmt.Sprintf(
			"the database file %s is gone (deleted or moved) since the connection opened it; put the file back or fix the connection's path", e.path)}
	case err != nil:
		return nil, &contracts.DBError{Class: contracts.DBUnavailable, Message: "the database file cannot be checked: " + err.Error()}
	case e.db != nil && os.SameFile(fi, e.ident):
		return e.db, nil
	}
	if e.db != nil {
		e.db.Close()
		e.db = nil
	}
	// A failed open is tried again by the next operation.
	db, ident, _, err := e.openDB(ctx)
	if err != nil {
		return nil, &contracts.DBError{Class: contracts.DBUnavailable, Message: fmt.Sprintf(
			"the database file %s was replaced since the connection opened it, and the new one cannot be read: %v", e.path, err)}
	}
	e.db, e.ident = db, ident
	return db, nil
}

// OpenConnection is the executor's engine.Opener for duckdb connections.
func OpenConnection(ctx context.Context, c connections.Connection, o engine.Options) (engine.Engine, error) {
	return OpenWith(ctx, c.Path, c.Readable, c.LargeTables, o)
}

// Close closes the engine's connections and its guard.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	var err error
	if e.db != nil {
		err = e.db.Close()
		e.db = nil
	}
	return errors.Join(e.guard.Close(), err)
}

// Result is what one operation sent to DuckDB and what came back.
type Result = engine.Result

// Read runs one guarded SELECT. Its error is a *contracts.Refusal (refused
// before execution), a *rowset.TooLargeError (the result passed a bound of a
// refusing profile) or a *contracts.DBError (the database failed it). A
// non-positive timeout means no deadline.
func (e *Engine) Read(ctx context.Context, req engine.Request) (Result, error) {
	st, ref := e.guarded(req) // the same gate a plan passes (plan.go)
	if ref != nil {
		if ref.Code == contracts.RefuseResultTooLarge && req.Limits.Truncate {
			// A value wider than a read may hold: a truncating profile
			// (inspect) shows what came before it — nothing — as truncated,
			// as SQLite and PostgreSQL do; the value is never built.
			return Result{SQL: req.SQL, Rows: truncated(nil, req.Limits)}, nil
		}
		return Result{}, ref
	}
	res, err := e.run(ctx, st.Text, req.Params, req.Limits, req.Timeout)
	res.Fingerprint = st.Fingerprint()
	return res, err
}

// run sends one SELECT, a guarded read's or a composed catalog statement:
// DuckDB's prepare must agree it is one SELECT, and it runs wrapped so that
// DuckDB produces no more than limits can use (bounded.go), its columns
// keeping the statement's own names. Errors as for Read.
func (e *Engine) run(ctx context.Context, stmt string, params []any, limits rowset.Limits, timeout time.Duration) (res Result, err error) {
	res.SQL = stmt
	ctx, conn, cols, release, err := e.agreed(ctx, stmt, len(params), timeout)
	if err != nil {
		return res, err
	}
	defer release()
	if cols == nil {
		if cols, err = probeColumns(ctx, conn, stmt, params); err != nil {
			return res, e.failed(err, timeout)
		}
	}
	query := boundedSQL(stmt, cols, limits)

	start := time.Now()
	defer func() { res.Duration = time.Since(start) }()
	res.Statements = 1
	rows, err := conn.QueryContext(ctx, query, params...)
	if err != nil {
		if limits.Truncate && overWide(err) {
			res.Rows = truncated(nil, limits)
			return res, nil
		}
		return res, e.failed(err, timeout)
	}
	defer rows.Close()
	set, err := collectBounded(rows, cols, limits)
	res.Rows = set
	var tooLarge *rowset.TooLargeError
	if err != nil && limits.Truncate && overWide(err) {
		res.Rows = truncated(set, limits)
		return res, nil
	}
	if err != nil && !errors.As(err, &tooLarge) {
		return res, e.failed(err, timeout)
	}
	return res, err
}

// overWide reports DuckDB refusing a value past the size it can hold.
func overWide(err error) bool {
	var de *duckdb.Error
	return engine.Interrupted(err, 0) == nil && errors.As(err, &de) && de.Type == duckdb.ErrorTypeObjectSize
}

// truncated marks set (a new empty one when nil) as truncated by bytes: the
// rows before a value wider than a read may hold.
func truncated(set *rowset.Set, limits rowset.Limits) *rowset.Set {
	if set == nil {
		set = rowset.New(nil, limits)
	}
	set.Truncated, set.TruncatedBy = true, []string{rowset.ByBytes}
	return set
}

// failed classifies an error from running a statement. DuckDB running out
// of its memory_limit (an error of type out-of-memory, or a value past the
// size DuckDB can hold) is the statement needing more memory than an
// operation may hold here: refused as result_too_large, not a failure of
// the database to retry.
func (e *Engine) failed(err error, timeout time.Duration) error {
	var de *duckdb.Error
	if engine.Interrupted(err, timeout) == nil && errors.As(err, &de) &&
		(de.Type == duckdb.ErrorTypeOutOfMemory || de.Type == duckdb.ErrorTypeObjectSize) {
		return guard.Refuse(contracts.RefuseResultTooLarge,
			fmt.Sprintf("the statement needs more memory than DuckDB may use here (memory_limit %d MiB, shared by this connection's reads): %s", e.limit>>20, de.Msg),
			"aggregate over fewer rows, build shorter values (substr(), length() of long text), or add a WHERE that reads less")
	}
	return classify(err, timeout)
}

// agreed takes a connection to the file the path names now, under the
// statement's deadline, once DuckDB's prepare agrees stmt is one SELECT
// (engineAgrees, whose columns it returns). Everything sent about stmt — the
// read, its plan — goes through here. release returns the connection and
// ends the deadline.
func (e *Engine) agreed(ctx context.Context, stmt string, bound int, timeout time.Duration) (context.Context, *sql.Conn, []column, func(), error) {
	cancel := func() {}
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, timeout)
	}
	db, dbErr := e.current(ctx)
	if dbErr != nil {
		cancel()
		return ctx, nil, nil, nil, dbErr
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		cancel()
		return ctx, nil, nil, nil, classify(err, timeout)
	}
	release := func() { conn.Close(); cancel() }
	cols, err := engineAgrees(conn, stmt, bound, timeout)
	if err != nil {
		release()
		return ctx, nil, nil, nil, err
	}
	return ctx, conn, cols, release, nil
}

// engineAgrees asks DuckDB itself, through the driver's single-statement
// prepare, whether stmt is exactly one SELECT: the guard's reading is held
// to the engine's. (The driver's context-aware prepare would run every
// statement but the last of a multi-statement text; this one refuses them.)
// A statement DuckDB fails to bind (a missing column, say) is the database's
// error, classified; anything else the driver refuses is an engine_parse
// refusal. It returns the statement's columns as the prepare names and types
// them (preparedColumns: nil when a parameter leaves them untyped). A
// statement that takes a number of parameters other than the bound values
// is the caller's mistake (bad_request), said before anything runs.
func engineAgrees(conn *sql.Conn, stmt string, bound int, timeout time.Duration) ([]column, error) {
	var (
		verdict error
		cols    []column
	)
	err := conn.Raw(func(dc any) error {
		c, ok := dc.(*duckdb.Conn)
		if !ok {
			return fmt.Errorf("duckdb: unexpected driver connection %T", dc)
		}
		ds, err := c.Prepare(stmt)
		if err != nil {
			var dbErr *duckdb.Error
			if errors.As(err, &dbErr) {
				verdict = classify(err, timeout)
			} else {
				verdict = guard.Refuse(contracts.RefuseEngineParse,
					"DuckDB does not read this as one statement: "+err.Error(), "send one plain SELECT")
			}
			return nil
		}
		defer ds.Close()
		s, ok := ds.(*duckdb.Stmt)
		if !ok {
			return fmt.Errorf("duckdb: unexpected driver statement %T", ds)
		}
		t, err := s.StatementType()
		if err != nil {
			return err
		}
		if t != duckdb.STATEMENT_TYPE_SELECT {
			verdict = guard.Refuse(contracts.RefuseEngineParse,
				fmt.Sprintf("DuckDB reads this as a statement of type %d, not a SELECT", t), "send one plain SELECT")
			return nil
		}
		if n := s.NumInput(); n >= 0 && n != bound {
			verdict = &contracts.Refusal{Code: contracts.RefuseBadRequest,
				Message: fmt.Sprintf("the statement has %d parameters and %d values were bound", n, bound),
				Fix:     "bind exactly one value per parameter, in order ($1 or ? first)"}
			return nil
		}
		cols, err = preparedColumns(s)
		return err
	})
	if err != nil {
		return nil, classify(err, timeout)
	}
	return cols, verdict
}
