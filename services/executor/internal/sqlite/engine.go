// Package sqlite is the SQLite engine of the executor: it opens a database
// file so that SQLite itself holds it read-only, guards each statement with
// SQLite's own compiler (pkg/guard/sqlite), runs it under a deadline with
// its parameters bound separately, and collects its rows under a profile's
// bounds.
//
// What holds a connection read-only, outermost first:
//   - the guard: one statement (SQLite's own reading proves it), a SELECT,
//     allowlisted functions, readable tables, large tables bounded, refused
//     with a code before anything runs (the driver would run every statement
//     of a multi-statement text);
//   - the authorizer (guardsqlite.Authorizer), installed on every connection
//     this engine opens and consulted by SQLite whenever it compiles, also
//     while a statement runs: only reads of readable tables, allowlisted
//     functions and the metadata pragmas compile (the engine's own inventory
//     statements, never a caller's, run under catalogAuthorizer, which also
//     lets them read sqlite_schema and sqlite_stat1: inventory.go);
//   - mode=ro: the file is opened read-only, so a write fails with
//     SQLITE_READONLY whatever compiled (never immutable=1, which would let
//     SQLite read a file another process changes as if it were constant);
//   - query_only and trusted_schema=OFF pragmas, and sqlite3_limit bounds on
//     statement length, values (the operation's memory, at most 1 MB),
//     LIKE and GLOB patterns, parameters and attached databases.
//
// What holds a read's time and memory: SQLite hears an interrupt (the
// deadline, a cancel) only between the steps of a statement's program, and
// a read runs in this process, in a goroutine nothing can stop from outside;
// so no single step may run long. The guard refuses pattern work over built
// values (pkg/guard/sqlite, work.go), a LIKE or GLOB pattern is at most
// MaxPatternBytes, and a value at most the value limit, so one step ends
// within about a second and the interrupt lands; Read returns only once the
// statement has stopped. SQLite's hard heap limit (heap.go) holds what
// aggregates build while they run.
//
// The file is the one the connection opened: a path that is a symbolic link,
// or lies under one, is refused (the file read must be the file named), and
// each operation checks that the path still names the same file (device and
// inode). A file replaced under the path is reopened; a deleted one fails
// the operation as unavailable rather than being served from the old copy.
package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	guardsqlite "github.com/sondehq/sonde/pkg/guard/sqlite"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/refuse"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// MaxConns bounds the open connections (and so the concurrent statements) of
// one engine.
const MaxConns = 8

// Limits on a read, refused before SQLite sees the statement (SQL, parameters,
// columns) or enforced by SQLite itself (sqlite3_limit: values).
const (
	MaxSQLBytes    = 64 << 10 // statement text
	MaxParams      = 128      // parameters bound to one statement
	MaxParamBytes  = 64 << 10 // their data, all together
	MaxColumns     = 128      // result columns
	MaxValueBytes  = 1 << 20  // longest string or BLOB a statement may build or read, and a row
	limitSQLLength = MaxSQLBytes + 16
	// MaxPatternBytes is the longest LIKE or GLOB pattern
	// (SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 50,000 by default). A match is one
	// step of a statement's program, which SQLite's interrupt cannot stop,
	// and its work grows with the value's length times the pattern's: at
	// MaxValueBytes and this length one match takes about a second here.
	MaxPatternBytes = 128
)

// DefaultSchema is the schema an unqualified SQLite table name is in.
const DefaultSchema = "main"

// Engine reads one SQLite database file. It is safe for concurrent use.
type Engine struct {
	path       string // absolute
	policy     guard.Policy
	valueLimit int // SQLITE_LIMIT_LENGTH of every connection

	mu    sync.Mutex
	db    *sql.DB
	ident os.FileInfo // the file db's connections open
}

// Open opens the database file at path read-only and checks that it is a
// SQLite database; p's readable and large tables hold every read (its
// DefaultSchema is always main). The engine's connections come from a driver
// of its own, so the authorizer installed on them applies to nothing else in
// the process. A path that is, or lies under, a symbolic link is refused.
// Values are limited to MaxValueBytes.
func Open(ctx context.Context, path string, p guard.Policy) (*Engine, error) {
	return OpenWith(ctx, path, p, engine.Options{})
}

// OpenWith is Open with the executor's options: a value (and a row) may be
// no longer than o.OperationMemory, nor than MaxValueBytes.
func OpenWith(ctx context.Context, path string, p guard.Policy, o engine.Options) (*Engine, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	p = guardsqlite.NormalizePolicy(p)
	p.DefaultSchema = DefaultSchema
	if err := limitHeap(HeapLimit(o.OperationMemory)); err != nil {
		return nil, err
	}
	e := &Engine{path: abs, policy: p, valueLimit: MaxValueBytes}
	if o.OperationMemory > 0 && o.OperationMemory < int64(e.valueLimit) {
		e.valueLimit = int(max(o.OperationMemory, 1024))
	}
	db, ident, err := e.openDB(ctx)
	if err != nil {
		return nil, err
	}
	e.db, e.ident = db, ident
	return e, nil
}

// checkPath holds the path to what the SQLite inspection rules allow: a
// regular file, not a symbolic link, under no symbolic link, whose existing
// -wal, -shm and -journal companions are regular files with one link. It
// returns the file's identity.
func checkPath(abs string) (os.FileInfo, error) {
	fi, err := os.Lstat(abs)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s is a symbolic link; name the database file itself", abs)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", abs)
	}
	dir := filepath.Dir(abs)
	if real, err := filepath.EvalSymlinks(dir); err != nil {
		return nil, err
	} else if real != dir {
		return nil, fmt.Errorf("%s lies under a symbolic link (its directory is %s); name the file by that path", abs, real)
	}
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		side, err := os.Lstat(abs + suffix)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !side.Mode().IsRegular() || hardLinks(side) > 1 {
			return nil, fmt.Errorf("%s%s is not a plain file of its own (a link, a special file, or a file with other hard links); remove it or move the database", abs, suffix)
		}
	}
	return fi, nil
}

// openDB opens a pool on the engine's file and proves it is a database.
func (e *Engine) openDB(ctx context.Context) (*sql.DB, os.FileInfo, error) {
	abs, p := e.path, e.policy
	ident, err := checkPath(abs)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: %w", err)
	}
	drv := &sqlite.Driver{}
	drv.RegisterConnectionHook(func(conn sqlite.ExecQuerierContext, _ string) error {
		reg, ok := conn.(sqlite.AuthorizerRegisterer)
		if !ok {
			return errors.New("sqlite: the driver offers no authorizer")
		}
		return reg.RegisterAuthorizer(guardsqlite.Authorizer(p, nil))
	})
	db := sql.OpenDB(connector{drv: drv, dsn: dsn(abs)})
	db.SetMaxOpenConns(MaxConns)
	db.SetMaxIdleConns(MaxConns)
	db.SetConnMaxIdleTime(10 * time.Minute)

	// Reading the catalog proves the file is a database we can open.
	conn, err := db.Conn(ctx)
	if err == nil {
		err = conn.Raw(func(dc any) error {
			return dc.(sqlite.AuthorizerRegisterer).RegisterAuthorizer(guardsqlite.Authorizer(guardsqlite.CatalogPolicy(), nil))
		})
		if err == nil {
			var n int
			err = conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n)
		}
		conn.Raw(func(dc any) error { // back to the connection's own policy
			return dc.(sqlite.AuthorizerRegisterer).RegisterAuthorizer(guardsqlite.Authorizer(p, nil))
		})
		conn.Close()
	}
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}
	return db, ident, nil
}

// current returns the pool on the file the path names now: the same file as
// before, or — when another file was put in its place — a new pool on it
// (the old one closes once its operations end). A path that names no file
// (deleted, moved) or a symbolic link fails as unavailable.
func (e *Engine) current(ctx context.Context) (*sql.DB, *contracts.DBError) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.db == nil {
		return nil, &contracts.DBError{Class: contracts.DBUnavailable, Message: "the connection is closed"}
	}
	fi, err := os.Lstat(e.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, &contracts.DBError{Class: contracts.DBUnavailable, Message: fmt.Sprintf(
			"the database file %s is gone (deleted or moved) since the connection opened it; put the file back or fix the connection's path", e.path)}
	case err != nil:
		return nil, &contracts.DBError{Class: contracts.DBUnavailable, Message: "the database file cannot be checked: " + err.Error()}
	case os.SameFile(fi, e.ident) && fi.Mode()&os.ModeSymlink == 0:
		return e.db, nil
	}
	db, ident, err := e.openDB(ctx)
	if err != nil {
		return nil, &contracts.DBError{Class: contracts.DBUnavailable, Message: fmt.Sprintf(
			"the database file %s was replaced since the connection opened it, and the new one cannot be read: %v", e.path, err)}
	}
	old := e.db
	e.db, e.ident = db, ident
	go old.Close() // waits for the operations still running on the old file
	return db, nil
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
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.db == nil {
		return nil
	}
	db := e.db
	e.db = nil
	return db.Close()
}

// Result is what one operation sent to SQLite and what came back.
type Result = engine.Result

// Read guards one statement and runs it with req.Params bound. Its error is
// a *contracts.Refusal (refused before execution), a *rowset.TooLargeError
// (the result passed a bound of a refusing profile) or a *contracts.DBError
// (the database failed it). A non-positive timeout means no deadline.
func (e *Engine) Read(ctx context.Context, req engine.Request) (Result, error) {
	params, ref := checkRequest(req)
	if ref != nil {
		return Result{}, ref
	}
	db, dbErr := e.current(ctx)
	if dbErr != nil {
		return Result{}, dbErr
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return Result{}, classify(err, req.Timeout, "")
	}
	defer conn.Close()
	if err := setLimits(conn, e.valueLimit); err != nil {
		return Result{}, classify(err, req.Timeout, "")
	}

	// The guard, and the refusals in SQLite's own words; a plan passes the
	// same gate (plan.go).
	rd, failed, err := e.guardRead(ctx, conn, req)
	if err != nil {
		return failed, err
	}
	switch n, named := guardsqlite.Parameters(req.SQL, MaxParams); {
	case named:
		return Result{}, refuse.New(refuse.BadRequest, "the statement names a parameter (:name, @name or $name), which a list of values cannot bind",
			"write ? or ?NNN for each parameter and bind the values in that order")
	case n != len(params):
		return Result{}, refuse.New(refuse.BadRequest,
			fmt.Sprintf("the statement has %d parameters and %d values were bound", n, len(params)),
			"bind exactly one value per parameter, in order (?NNN is parameter NNN)")
	}
	res, err := e.run(ctx, conn, rd.Text, rd.CTEs, params, req.Limits, req.Timeout)
	res.Fingerprint = rd.Fingerprint()
	return res, err
}

// checkRequest holds a read to the limits on its text and parameters and
// converts the parameters for binding.
func checkRequest(req engine.Request) ([]any, *contracts.Refusal) {
	if len(req.SQL) > MaxSQLBytes {
		return nil, refuse.New(refuse.BadRequest,
			fmt.Sprintf("the statement is %d bytes long, more than the %d a SQLite read may be", len(req.SQL), MaxSQLBytes),
			"shorten it: read fewer columns or move long literals into parameters")
	}
	if len(req.Params) > MaxParams {
		return nil, refuse.New(refuse.BadRequest,
			fmt.Sprintf("%d parameters, more than the %d a statement may bind", len(req.Params), MaxParams),
			"bind fewer values: compare against a range, or join a VALUES list")
	}
	args := make([]any, len(req.Params))
	size := 0
	for i, p := range req.Params {
		v, n, err := param(p)
		if err != nil {
			return nil, refuse.New(refuse.BadRequest, fmt.Sprintf("parameter %d: %v", i+1, err),
				"bind null, a boolean, a finite number or a string")
		}
		args[i], size = v, size+n
	}
	if size > MaxParamBytes {
		return nil, refuse.New(refuse.BadRequest,
			fmt.Sprintf("the parameters hold %d bytes, more than the %d allowed", size, MaxParamBytes),
			"bind shorter values")
	}
	return args, nil
}

// param converts one parameter, as JSON decodes it, for binding: a whole
// number becomes an integer.
func param(p any) (any, int, error) {
	switch v := p.(type) {
	case nil:
		return nil, 0, nil
	case bool:
		return v, 1, nil
	case string:
		return v, len(v), nil
	case int:
		return int64(v), 8, nil
	case int64:
		return v, 8, nil
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, 0, errors.New("a non-finite number")
		}
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int64(v), 8, nil
		}
		return v, 8, nil
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i, 8, nil
		}
		f, err := v.Float64()
		if err != nil || math.IsInf(f, 0) {
			return nil, 0, fmt.Errorf("%s is not a number SQLite can bind", v)
		}
		return f, 8, nil
	}
	return nil, 0, fmt.Errorf("a %T cannot be bound (arrays and objects are not values)", p)
}

// checkColumns holds a result to MaxColumns and to one name per column: a
// JSON row keyed by name would lose a value.
func checkColumns(cols []string) *contracts.Refusal {
	if len(cols) > MaxColumns {
		return refuse.New(refuse.Unsupported,
			fmt.Sprintf("the result has %d columns, more than %d", len(cols), MaxColumns),
			"select the columns you need by name")
	}
	seen := make(map[string]bool, len(cols))
	for _, c := range cols {
		k := strings.ToLower(c)
		if seen[k] {
			return refuse.New(refuse.Unsupported,
				fmt.Sprintf("the result has more than one column named %q", c),
				"use AS aliases so that every result column has its own name")
		}
		seen[k] = true
	}
	return nil
}

// OpenConnection is the executor's engine.Opener for sqlite connections: the
// connection's readable patterns and large tables hold its reads.
func OpenConnection(ctx context.Context, c connections.Connection, o engine.Options) (engine.Engine, error) {
	return OpenWith(ctx, c.Path, guard.Policy{Readable: c.Readable, LargeTables: c.LargeTables}, o)
}

// run runs one statement on conn under the engine's authorizer and
// collects its rows. ctes are
// the statement's CTE names that name no table (guardsqlite.Reading.CTEs):
// SQLite compiles the statement again here, and reports a CTE read without
// a column as it reports a table's.
func (e *Engine) run(ctx context.Context, conn *sql.Conn, stmt string, ctes []string, args []any, limits rowset.Limits, timeout time.Duration) (res Result, err error) {
	res.SQL = stmt
	rec := &guardsqlite.Record{}
	if err := setAuthorizer(conn, guardsqlite.StatementAuthorizer(e.policy, rec, ctes)); err != nil {
		return res, classify(err, timeout, "")
	}
	// A pooled connection goes back under the connection's own policy.
	defer setAuthorizer(conn, guardsqlite.Authorizer(e.policy, nil))
	denied := func() string { _, what := rec.Denied(); return what }
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}

	start := time.Now()
	defer func() { res.Duration = time.Since(start) }()
	res.Statements = 1
	rows, err := conn.QueryContext(ctx, stmt, args...)
	if err != nil {
		if tooBig(err) {
			return res, e.tooLarge(&res, nil, limits)
		}
		if outOfMemory(err) {
			return res, heapRefusal()
		}
		return res, classify(err, timeout, denied())
	}
	defer rows.Close()

	set, err := rowset.Collect(rows, limits, finiteValue, nil)
	res.Rows = set
	if err != nil && tooBig(err) {
		return res, e.tooLarge(&res, set, limits)
	}
	if err != nil && outOfMemory(err) {
		return res, heapRefusal()
	}
	var (
		tooLarge *rowset.TooLargeError
		valueErr *rowset.ValueError
		dbErr    *contracts.DBError
	)
	switch {
	case err == nil, errors.As(err, &tooLarge):
		return res, err
	case errors.As(err, &valueErr) && errors.As(valueErr.Err, &dbErr):
		// Our own refusal of a value: keep its class, say where it was.
		return res, &contracts.DBError{Class: dbErr.Class,
			Message: fmt.Sprintf("row %d, column %q: %s", valueErr.Row, valueErr.Column, dbErr.Message)}
	case errors.As(err, &valueErr):
		return res, classify(err, timeout, "")
	}
	return res, classify(err, timeout, denied())
}

// tooBig reports SQLite's SQLITE_TOOBIG: a string, BLOB or row longer than
// the connection's SQLITE_LIMIT_LENGTH, built or read.
func tooBig(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_TOOBIG
}

// outOfMemory reports SQLite's SQLITE_NOMEM: an allocation past the hard
// heap limit (heap.go), or one the system refused.
func outOfMemory(err error) bool {
	var se *sqlite.Error
	return engine.Interrupted(err, 0) == nil && errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_NOMEM
}

// heapRefusal answers a statement that needed more of SQLite's heap than
// the process allows: refused as too large, whatever the profile, since no
// part of a result stands for what it would have built.
func heapRefusal() *contracts.Refusal {
	heap.mu.Lock()
	limit := heap.limit
	heap.mu.Unlock()
	return refuse.New(contracts.RefuseResultTooLarge,
		fmt.Sprintf("the statement needs more memory than SQLite may use here (%d MiB, shared by every read of this executor): an aggregate or function built a value too large to hold", limit>>20),
		"aggregate fewer rows or shorter values (group_concat, json_group_array and the like hold everything they join), or read length() of what you build")
}

// tooLarge ends a read that met a value over the connection's limit as a
// result that passed its bound: truncated where the profile truncates,
// *rowset.TooLargeError where it refuses. SQLite stopped the value at the
// limit, so it never took more memory than that.
func (e *Engine) tooLarge(res *Result, set *rowset.Set, limits rowset.Limits) error {
	if set == nil {
		set = rowset.New(nil, limits)
	}
	res.Rows = set
	if limits.Truncate {
		set.Truncated, set.TruncatedBy = true, []string{rowset.ByBytes}
		return nil
	}
	limit := limits.MaxBytes
	if limit <= 0 || limit > e.valueLimit {
		limit = e.valueLimit
	}
	return &rowset.TooLargeError{By: rowset.ByBytes, Limit: limit, Rows: len(set.Rows)}
}

// finiteValue converts a scanned SQLite value; a non-finite number fails
// explicitly rather than reaching a result as something JSON cannot carry.
func finiteValue(v any, _ string) (any, error) {
	if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
		return nil, &contracts.DBError{Class: contracts.DBOther, Message: fmt.Sprintf(
			"%v is not a finite number, which a result cannot carry; read it with CAST(… AS TEXT) or test it with a comparison", f)}
	}
	return rowset.Value(v)
}

// setAuthorizer installs auth on conn.
func setAuthorizer(conn *sql.Conn, auth sqlite.AuthorizerFn) error {
	return conn.Raw(func(dc any) error {
		reg, ok := dc.(sqlite.AuthorizerRegisterer)
		if !ok {
			return fmt.Errorf("sqlite: connection %T offers no authorizer", dc)
		}
		return reg.RegisterAuthorizer(auth)
	})
}

// setLimits applies the per-connection sqlite3_limit bounds; valueLimit is
// the longest string, BLOB or row.
func setLimits(conn *sql.Conn, valueLimit int) error {
	for _, l := range []struct{ id, v int }{
		{sqlite3.SQLITE_LIMIT_LENGTH, valueLimit},
		{sqlite3.SQLITE_LIMIT_SQL_LENGTH, limitSQLLength},
		{sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, MaxParams},
		{sqlite3.SQLITE_LIMIT_ATTACHED, 0},
		{sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, MaxPatternBytes},
	} {
		if _, err := sqlite.Limit(conn, l.id, l.v); err != nil {
			return err
		}
	}
	return nil
}
