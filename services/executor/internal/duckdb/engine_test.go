package duckdb

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2" // also the package-level driver, for writable fixtures
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/cputest"
	"github.com/sondehq/sonde/pkg/guard/duckdb/duckdbtest"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

var (
	refuseLimits   = rowset.Limits{MaxRows: 200, MaxBytes: 256 << 10}
	truncateLimits = rowset.Limits{MaxRows: 200, MaxBytes: 256 << 10, Truncate: true}
)

// fixture writes a small database, named shop like the corpora's catalog,
// with a writable instance and returns its path once that instance is closed.
func fixture(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shop.duckdb")
	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		"CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR, country VARCHAR)",
		"INSERT INTO customers VALUES (1, 'Ann', 'DE'), (2, 'Bob', 'FR'), (3, 'Cem', 'DE')",
		"CREATE TABLE orders (id INTEGER, customer_id INTEGER, status VARCHAR, total DECIMAL(10,2), ordered_at DATE)",
		"INSERT INTO orders SELECT i, 1 + i % 3, CASE WHEN i % 2 = 0 THEN 'paid' ELSE 'open' END, i * 1.25, DATE '2025-01-01' + i::INTEGER FROM range(1, 301) t(i)",
		"CREATE TABLE events (id INTEGER, customer_id INTEGER, kind VARCHAR, event_date DATE)",
		"INSERT INTO events SELECT i, 1 + i % 3, 'click', DATE '2025-01-01' + (i % 60)::INTEGER FROM range(1, 1001) t(i)",
		"CREATE TABLE secrets (id INTEGER, token VARCHAR)",
		"INSERT INTO secrets VALUES (1, 'hunter2')",
		"CREATE SEQUENCE seq",
		"CREATE VIEW paid AS SELECT * FROM orders WHERE status = 'paid'",
		`CREATE TABLE kinds (i8 TINYINT, u64 UBIGINT, h HUGEINT, f REAL, d DECIMAL(20,4), t TIME, ts TIMESTAMP,
		  iv INTERVAL, u UUID, b BLOB, l INTEGER[], s STRUCT(a INTEGER, b VARCHAR), m MAP(VARCHAR, INTEGER), x DOUBLE)`,
		`INSERT INTO kinds VALUES (-5, 18446744073709551615, 170141183460469231731687303715884105727, 1.5, 12345.6789,
		  TIME '13:45:01', TIMESTAMP '2025-03-01 10:00:00', INTERVAL 3 DAY, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
		  '\x00\xFF'::BLOB, [1, 2], {'a': 1, 'b': 'x'}, MAP {'k': 1}, 'inf'::DOUBLE)`,
		"CHECKPOINT",
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func open(t testing.TB, path string, readable []string, large map[string]string) *Engine {
	t.Helper()
	e, err := Open(context.Background(), path, readable, large)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func corpusEngine(t testing.TB) (*Engine, string) {
	p := duckdbtest.Policy()
	path := fixture(t)
	return open(t, path, p.Readable, p.LargeTables), path
}

func read(sql string) engine.Request {
	return engine.Request{SQL: sql, Limits: refuseLimits, Timeout: 5 * time.Second}
}

func digest(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// dirListing names every file beside the database: a write would leave a WAL
// or a temporary directory there.
func dirListing(t testing.TB, path string) string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return strings.Join(names, ",")
}

// The hostile corpus, run against a real file: every shape refused with its
// code; then every shape sent straight to the locked instance, past the
// guard, to show what DuckDB itself holds; the file's bytes never change.
func TestHostileCorpusLeavesFileUnchanged(t *testing.T) {
	e, path := corpusEngine(t)
	before, files := digest(t, path), dirListing(t, path)
	ctx := context.Background()
	for _, c := range duckdbtest.Hostile {
		req := read(c.SQL)
		start := time.Now()
		_, err := e.Read(ctx, req)
		var ref *contracts.Refusal
		if !errors.As(err, &ref) || string(ref.Code) != c.Code {
			t.Errorf("%q: %v, want refusal %s", c.SQL, err, c.Code)
		}
		// Wall time: every line ends within twice its deadline (a refusal
		// at once), and leaves no work running (cputest.WorkGone).
		if took := time.Since(start); took > 2*req.Timeout {
			t.Errorf("%q: answered after %s, more than twice its %s deadline", c.SQL, took, req.Timeout)
		}
	}
	cputest.WorkGone(t, "the hostile corpus")
	for _, q := range []string{
		"SELECT * FROM query('SELECT * FROM secrets')",
		"SELECT * FROM query_table('secrets')",
		"SELECT * FROM json_execute_serialized_sql(json_serialize_sql('SELECT * FROM secrets'))",
	} {
		_, err := e.Read(ctx, read(q))
		var ref *contracts.Refusal
		if !errors.As(err, &ref) || ref.Code != contracts.RefuseTableFunction {
			t.Errorf("%q: %v, want table_function", q, err)
		}
	}

	// Past the guard: what the instance's own settings refuse, each with the
	// error of the setting that holds it (TestInstanceSettingsAlone covers
	// every connection of the pool).
	for _, w := range layerWrites(t.TempDir()) {
		_, err := e.db.ExecContext(ctx, w.sql)
		var de *duckdb.Error
		if !errors.As(err, &de) || de.Type != w.typ || !strings.Contains(de.Msg, w.words) {
			t.Errorf("the locked instance answered %q with %v, want DuckDB error type %d saying %q", w.sql, err, w.typ, w.words)
		}
	}
	// A file named as a table is not read: with external access off there is
	// no replacement scan, so it is a missing table.
	_, err := e.db.ExecContext(ctx, "SELECT * FROM '/etc/hostname'")
	var de *duckdb.Error
	if !errors.As(err, &de) || de.Type != duckdb.ErrorTypeCatalog {
		t.Errorf("SELECT * FROM '/etc/hostname' on the locked instance: %v, want a catalog error", err)
	}
	for _, c := range duckdbtest.Hostile {
		if strings.Contains(c.SQL, "sleep") || strings.HasPrefix(c.SQL, "BEGIN") || strings.HasPrefix(c.SQL, "PRAGMA") || strings.HasPrefix(c.SQL, "EXPLAIN") {
			continue // holds or reconfigures the connection, or prints; refused by the guard above
		}
		if c.Code == string(contracts.RefuseResultTooLarge) || c.Code == string(contracts.RefuseTooComplex) {
			// Builds values of gigabytes, or does work DuckDB cannot
			// interrupt (regexp_extract_all ran 134 s past a 1 s deadline):
			// the guard's to refuse, which it did above.
			continue
		}
		start := time.Now()
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		rows, err := e.db.QueryContext(qctx, c.SQL)
		if err == nil {
			rows.Close()
		}
		cancel()
		if took := time.Since(start); took > 4*time.Second {
			t.Errorf("%q past the guard: ended after %s, more than twice its 2s deadline", c.SQL, took)
		}
	}
	cputest.WorkGone(t, "the hostile corpus past the guard")
	if after := digest(t, path); after != before {
		t.Fatalf("the database file changed: %s -> %s", before, after)
	}
	if after := dirListing(t, path); after != files {
		t.Fatalf("files beside the database changed: %s -> %s", files, after)
	}
}

func TestValidAnalyticsRun(t *testing.T) {
	e, path := corpusEngine(t)
	before := digest(t, path)
	for _, q := range duckdbtest.Valid {
		if q == "SELECT * FROM events WHERE event_date = ?" {
			continue
		}
		req := read(q)
		req.Limits = truncateLimits
		res, err := e.Read(context.Background(), req)
		if err != nil {
			var dbErr *contracts.DBError
			if errors.As(err, &dbErr) {
				t.Errorf("%q: %s: %s", q, dbErr.Class, dbErr.Message)
			} else {
				t.Errorf("%q: %v", q, err)
			}
			continue
		}
		if res.Rows == nil || res.Statements != 1 || strings.HasSuffix(res.SQL, ";") {
			t.Errorf("%q: %+v", q, res)
		}
	}
	if digest(t, path) != before {
		t.Fatal("the database file changed")
	}
}

func TestReadParamsAndValues(t *testing.T) {
	e := open(t, fixture(t), nil, map[string]string{"events": "event_date"})
	req := read("SELECT count(*) AS n FROM events WHERE event_date >= ?")
	req.Params = []any{"2025-02-01"}
	res, err := e.Read(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Rows.Rows[0][0]; got != int64(474) {
		t.Errorf("count = %#v", got)
	}

	res, err = e.Read(context.Background(), read("SELECT * FROM kinds"))
	if err != nil {
		t.Fatal(err)
	}
	want := []any{
		int64(-5), "18446744073709551615", "170141183460469231731687303715884105727", 1.5, "12345.6789",
		"13:45:01", "2025-03-01 10:00:00", "0 months 3 days 0 microseconds", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
		rowset.NewBlob([]byte{0, 0xff}), []any{int64(1), int64(2)}, map[string]any{"a": int64(1), "b": "x"},
		[]any{map[string]any{"key": "k", "value": int64(1)}}, "Infinity",
	}
	row := res.Rows.Rows[0]
	for i, w := range want {
		if !equalJSON(t, row[i], w) {
			t.Errorf("column %s (%s) = %#v, want %#v", res.Rows.Columns[i].Name, res.Rows.Columns[i].Type, row[i], w)
		}
	}
	if res.Rows.Columns[4].Type != "DECIMAL(20,4)" {
		t.Errorf("column types %+v", res.Rows.Columns)
	}
}

func equalJSON(t testing.TB, a, b any) bool {
	t.Helper()
	return rowset.Text(a) == rowset.Text(b)
}

func TestLimits(t *testing.T) {
	e := open(t, fixture(t), nil, nil)
	ctx := context.Background()
	_, err := e.Read(ctx, read("SELECT * FROM orders"))
	var tooLarge *rowset.TooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.By != rowset.ByRows || tooLarge.Limit != 200 {
		t.Fatalf("300 rows under a refusing profile: %v", err)
	}
	req := read("SELECT * FROM orders")
	req.Limits = rowset.Limits{MaxRows: 1000, MaxBytes: 2000, Truncate: true}
	res, err := e.Read(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Rows.Truncated || res.Rows.TruncatedBy[0] != rowset.ByBytes || res.Rows.Bytes > 2000 || len(res.Rows.Rows) == 0 {
		t.Fatalf("truncated by bytes: %+v", res.Rows)
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	e := open(t, fixture(t), nil, nil)
	heavy := "SELECT sum(a.range * b.range) FROM range(200000) a, range(200000) b"
	req := read(heavy)
	req.Timeout = 300 * time.Millisecond
	start := time.Now()
	_, err := e.Read(context.Background(), req)
	var dbErr *contracts.DBError
	if !errors.As(err, &dbErr) || dbErr.Class != contracts.DBTimeout {
		t.Fatalf("heavy statement: %v, want timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("interrupted after %s", d)
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	req.Timeout = 0
	_, err = e.Read(ctx, req)
	if !errors.As(err, &dbErr) || dbErr.Class != contracts.DBCancelled {
		t.Fatalf("cancelled statement: %v, want cancelled", err)
	}
	// The connection is usable afterwards.
	if _, err := e.Read(context.Background(), read("SELECT 1")); err != nil {
		t.Fatal(err)
	}
}

func TestErrorsClassified(t *testing.T) {
	e := open(t, fixture(t), nil, nil)
	cases := map[string]contracts.DBErrorClass{
		"SELECT * FROM nope":                                    contracts.DBMissingObject,
		"SELECT nope FROM orders":                               contracts.DBMissingObject,
		"SELECT 'x'::INTEGER":                                   contracts.DBOther,
		"SELECT CAST(1e30 AS INTEGER)":                          contracts.DBOther,
		"SELECT id FROM orders GROUP BY 1, status HAVING total": contracts.DBSyntax,
	}
	for q, want := range cases {
		_, err := e.Read(context.Background(), read(q))
		var dbErr *contracts.DBError
		if !errors.As(err, &dbErr) || dbErr.Class != want {
			t.Errorf("%q: %v (%+v), want %s", q, err, dbErr, want)
		}
	}
}

func TestConcurrentReads(t *testing.T) {
	e := open(t, fixture(t), nil, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			res, err := e.Read(context.Background(), read("SELECT status, count(*) FROM orders GROUP BY ALL ORDER BY 1"))
			if err == nil && len(res.Rows.Rows) != 2 {
				err = errors.New("wrong result")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenFails(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(context.Background(), filepath.Join(dir, "missing.duckdb"), nil, nil); err == nil {
		t.Error("opened a missing file (read-only must never create one)")
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.duckdb")); !os.IsNotExist(err) {
		t.Error("a missing file was created")
	}
	junk := filepath.Join(dir, "junk.duckdb")
	os.WriteFile(junk, []byte("not a database"), 0o600)
	if _, err := Open(context.Background(), junk, nil, nil); err == nil {
		t.Error("opened a file that is not a database")
	}
}

// Chinook, when the shared dataset is present: a copy is opened, read and
// proved unchanged. Never required.
func TestChinook(t *testing.T) {
	src := filepath.Join("..", "..", "..", "..", "..", "shared", "datasets", "chinook", "chinook.duckdb")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Skipf("chinook not present: %v", err)
	}
	path := filepath.Join(t.TempDir(), "chinook.duckdb")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	before := digest(t, path)
	e := open(t, path, nil, nil)
	cat, err := e.Relations(context.Background(), engine.Request{Timeout: 5 * time.Second})
	if err != nil || len(cat.Relations) == 0 {
		t.Fatalf("relations: %v", err)
	}
	desc, err := e.Describe(context.Background(), engine.Request{Timeout: 5 * time.Second}, cat.Relations)
	if err != nil || len(desc.Relations) != len(cat.Relations) || desc.Statements != 2 {
		t.Fatalf("describe: %v (%d of %d relations, %d statements)", err, len(desc.Relations), len(cat.Relations), desc.Statements)
	}
	table := cat.Relations[0].QualifiedName()
	if _, err = e.Read(context.Background(), engine.Request{SQL: "SELECT count(*) FROM " + table, Limits: refuseLimits, Timeout: 5 * time.Second}); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	e.Close()
	if digest(t, path) != before {
		t.Fatal("chinook changed")
	}
}
