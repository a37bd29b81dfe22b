package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/refuse"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
	_ "modernc.org/sqlite" // the package-level driver, for writable fixtures
)

var (
	refuseLimits   = rowset.Limits{MaxRows: 200, MaxBytes: 256 << 10}
	truncateLimits = rowset.Limits{MaxRows: 200, MaxBytes: 256 << 10, Truncate: true}
)

// fixture writes a small database with the package-level (writable) driver
// and returns its path.
func fixture(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fixture.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{
		"CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, born DATE, photo BLOB)",
		"INSERT INTO t VALUES (1, 'ann', '2024-01-05', x'00ff10'), (2, NULL, '2024-02-29 13:45:00', NULL)",
		"INSERT INTO t VALUES (3, CAST(x'41ff42' AS TEXT), NULL, NULL)",
		"CREATE TABLE n (i INTEGER)",
		"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 1000) INSERT INTO n SELECT x FROM c",
		"CREATE INDEX n_i ON n(i)",
		"CREATE VIEW v AS SELECT id, name FROM t",
		"CREATE TABLE \"it's\" (a)",
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return path
}

func open(t testing.TB, path string) *Engine {
	t.Helper()
	e, err := Open(context.Background(), path, guard.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// readTimeout is the deadline of read.
const readTimeout = 5 * time.Second

func read(t *testing.T, e *Engine, q string) (Result, error) {
	t.Helper()
	return e.Read(context.Background(), engine.Request{SQL: q, Limits: refuseLimits, Timeout: readTimeout})
}

// objects lists what sqlite_master holds, read with the writable driver.
func objects(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var s string
	if err := db.QueryRow("SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master ORDER BY name)").Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func wantRefusal(t *testing.T, err error, code contracts.Code) {
	t.Helper()
	var r *contracts.Refusal
	if !errors.As(err, &r) || r.Code != code {
		t.Fatalf("err = %v, want refusal %s", err, code)
	}
}

func wantClass(t *testing.T, err error, class contracts.DBErrorClass) *contracts.DBError {
	t.Helper()
	var d *contracts.DBError
	if !errors.As(err, &d) || d.Class != class {
		t.Fatalf("err = %v (%+v), want database error %s", err, d, class)
	}
	return d
}

func TestReadValues(t *testing.T) {
	e := open(t, fixture(t))
	res, err := read(t, e, "SELECT id, name, born, photo, 1.5 AS f FROM t WHERE id < 3 ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	if res.Statements != 1 || res.Rows == nil {
		t.Fatalf("result %+v", res)
	}
	cols := res.Rows.Columns
	if len(cols) != 5 || cols[0] != (contracts.Column{Name: "id", Type: "INTEGER"}) || cols[2].Type != "DATE" {
		t.Errorf("columns %+v", cols)
	}
	want := [][]any{
		{int64(1), "ann", "2024-01-05", rowset.Blob{Type: "blob", Hex: "00ff10", Bytes: 3}, 1.5},
		{int64(2), nil, "2024-02-29 13:45:00", nil, 1.5},
	}
	if len(res.Rows.Rows) != len(want) {
		t.Fatalf("rows %v", res.Rows.Rows)
	}
	for i := range want {
		for j := range want[i] {
			if res.Rows.Rows[i][j] != want[i][j] {
				t.Errorf("row %d col %d = %#v, want %#v", i, j, res.Rows.Rows[i][j], want[i][j])
			}
		}
	}
}

func TestReadInvalidUTF8(t *testing.T) {
	e := open(t, fixture(t))
	_, err := read(t, e, "SELECT name FROM t WHERE id = 3")
	d := wantClass(t, err, contracts.DBOther)
	if !strings.Contains(d.Message, "not valid UTF-8") || !strings.Contains(d.Message, `column "name"`) {
		t.Errorf("message %q", d.Message)
	}
	// The documented way out: read it as bytes.
	res, err := read(t, e, "SELECT CAST(name AS BLOB) FROM t WHERE id = 3")
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Rows.Rows[0][0]; got != (rowset.Blob{Type: "blob", Hex: "41ff42", Bytes: 3}) {
		t.Errorf("blob %#v", got)
	}
}

func TestMultipleStatementsNotExecuted(t *testing.T) {
	path := fixture(t)
	before := objects(t, path)
	e := open(t, path)
	_, err := read(t, e, "select 1; create table x(a)")
	wantRefusal(t, err, refuse.NotOneStatement)
	if after := objects(t, path); after != before {
		t.Fatalf("catalog changed: %s -> %s", before, after)
	}
}

// TestDriverRunsEveryStatement documents why the guard must run before
// execution: handed the same text, the driver runs both statements.
func TestDriverRunsEveryStatement(t *testing.T) {
	path := fixture(t)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("select 1; create table x(a)")
	if err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if got := objects(t, path); !strings.Contains(got, ",x") {
		t.Fatalf("the driver did not run the second statement (catalog %s); the premise of the guard changed", got)
	}
}

func TestWritesRefused(t *testing.T) {
	path := fixture(t)
	before := objects(t, path)
	e := open(t, path)
	for _, q := range []string{
		"delete from t",
		"insert into t(id) values (9)",
		"update t set name = 'x'",
		"pragma writable_schema=1",
		"pragma query_only=0",
		"attach database 'other.db' as o",
		"create table x(a)",
		"drop table t",
		"vacuum",
	} {
		_, err := read(t, e, q)
		wantRefusal(t, err, refuse.NotASelect)
	}
	for q, code := range map[string]string{
		"with d as (select 1) delete from t":                     string(refuse.NotASelect),
		"with d as (select 1) insert into t(id) select * from d": string(refuse.NotASelect),
		"with d as (select 1) update t set name = 'x'":           string(refuse.NotASelect),
		"select * from pragma_compile_options":                   string(contracts.RefuseTableFunction),
		"select load_extension('evil')":                          string(contracts.RefuseFunctionDenied),
	} {
		_, err := read(t, e, q)
		wantRefusal(t, err, contracts.Code(code))
	}
	if after := objects(t, path); after != before {
		t.Fatalf("catalog changed: %s -> %s", before, after)
	}
	res, err := read(t, e, "select count(*) from t")
	if err != nil || res.Rows.Rows[0][0] != int64(3) {
		t.Fatalf("rows of t after the attempts: %v, %v", res.Rows, err)
	}
}

// TestReadOnlyWithoutAuthorizer: mode=ro holds by itself, under the
// authorizer and the guard.
func TestReadOnlyWithoutAuthorizer(t *testing.T) {
	path := fixture(t)
	if d := dsn(path); !strings.Contains(d, "mode=ro") || strings.Contains(d, "immutable") {
		t.Fatalf("dsn %s", d)
	}
	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for pragma, want := range map[string]int{"query_only": 1, "trusted_schema": 0} {
		var got int
		if err := db.QueryRow("pragma " + pragma).Scan(&got); err != nil || got != want {
			t.Errorf("pragma %s = %d, %v; want %d", pragma, got, err, want)
		}
	}
	_, err = db.Exec("pragma query_only=0; delete from t")
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "readonly") {
		t.Fatalf("write on a mode=ro connection: err = %v", err)
	}
}

func TestResultBounds(t *testing.T) {
	e := open(t, fixture(t))
	ctx := context.Background()
	q201 := "select i from n where i <= 201"

	res, err := e.Read(ctx, engine.Request{SQL: "select i from n where i <= 200", Limits: refuseLimits, Timeout: time.Second})
	if err != nil || len(res.Rows.Rows) != 200 || res.Rows.Truncated {
		t.Fatalf("200 rows: %v, %+v", err, res.Rows)
	}

	_, err = e.Read(ctx, engine.Request{SQL: q201, Limits: refuseLimits, Timeout: time.Second})
	var tl *rowset.TooLargeError
	if !errors.As(err, &tl) || tl.By != rowset.ByRows || tl.Limit != 200 {
		t.Fatalf("201 rows refusing: err = %v", err)
	}

	res, err = e.Read(ctx, engine.Request{SQL: q201, Limits: truncateLimits, Timeout: time.Second})
	if err != nil || len(res.Rows.Rows) != 200 || !res.Rows.Truncated || res.Rows.TruncatedBy[0] != rowset.ByRows {
		t.Fatalf("201 rows truncating: %v, %+v", err, res.Rows.Summary("c"))
	}

	// 150 rows of 2,000 characters: under the row bound, over 256 KiB.
	wide := "select i, printf('%.2000c', 'a') from n where i <= 150"
	_, err = e.Read(ctx, engine.Request{SQL: wide, Limits: refuseLimits, Timeout: time.Second})
	if !errors.As(err, &tl) || tl.By != rowset.ByBytes {
		t.Fatalf("wide refusing: err = %v", err)
	}
	res, err = e.Read(ctx, engine.Request{SQL: wide, Limits: truncateLimits, Timeout: time.Second})
	if err != nil || !res.Rows.Truncated || res.Rows.TruncatedBy[0] != rowset.ByBytes || res.Rows.Bytes > 256<<10 {
		t.Fatalf("wide truncating: %v, %+v", err, res.Rows.Summary("c"))
	}
}

func TestTimeout(t *testing.T) {
	e := open(t, fixture(t))
	start := time.Now()
	res, err := e.Read(context.Background(), engine.Request{
		SQL:    "with recursive c(x) as (select 1 union all select x+1 from c) select count(*) from c",
		Limits: refuseLimits, Timeout: 50 * time.Millisecond})
	wantClass(t, err, contracts.DBTimeout)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("interrupted after %s", took)
	}
	if res.Statements != 1 {
		t.Errorf("statements = %d", res.Statements)
	}
}

func TestCancel(t *testing.T) {
	e := open(t, fixture(t))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.Read(ctx, engine.Request{SQL: "select 1", Limits: refuseLimits, Timeout: time.Second})
	wantClass(t, err, contracts.DBCancelled)
}

func TestEngineErrors(t *testing.T) {
	e := open(t, fixture(t))
	for q, class := range map[string]contracts.DBErrorClass{
		"select * from nope": contracts.DBMissingObject,
		"select nope from t": contracts.DBMissingObject,
		"select nope(1)":     contracts.DBMissingObject,
	} {
		_, err := read(t, e, q)
		d := wantClass(t, err, class)
		if d.Message == "" {
			t.Errorf("%s: no message", q)
		}
	}
}

func TestSyntaxRefused(t *testing.T) {
	e := open(t, fixture(t))
	for _, q := range []string{"select * from", "select * frm t", "select * from t where id = 'a' +", "select 'open"} {
		_, err := read(t, e, q)
		wantRefusal(t, err, refuse.Unparsable)
	}
}

func TestOpenFailures(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(context.Background(), filepath.Join(dir, "missing.db"), guard.Policy{}); err == nil {
		t.Error("opened a missing file")
	}
	if _, err := Open(context.Background(), dir, guard.Policy{}); err == nil {
		t.Error("opened a directory")
	}
}
