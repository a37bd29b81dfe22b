package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	guardsqlite "github.com/sondehq/sonde/pkg/guard/sqlite"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Each read-only layer must hold with the others removed: a test that only
// ever sends writes through the guard cannot tell whether the authorizer
// below it still denies anything. These tests take the other layers away.

// layerWrite is one write and the refusal the authorizer gives it.
type layerWrite struct {
	sql  string
	code string // the code of the authorizer's first denial
}

// layerWrites are writes of every kind SQLite has, in an order in which each
// runs on a writable file (the control below proves it), so a denial is the
// layer's and not a mistake in the statement. dir is where the file lies:
// ATTACH and VACUUM INTO name new files beside it.
func layerWrites(dir string) []layerWrite {
	nr, ns := contracts.RefuseNotReadOnly, contracts.RefuseNotASelect
	return []layerWrite{
		{"INSERT INTO t(id) VALUES (9)", string(nr)},
		{"INSERT INTO t(id) SELECT i + 100 FROM n WHERE i < 3", string(nr)},
		{"UPDATE t SET name = 'x'", string(nr)},
		{"DELETE FROM n WHERE i > 900", string(nr)},
		{"REPLACE INTO t(id, name) VALUES (1, 'z')", string(nr)},
		{"INSERT INTO t(id) VALUES (2) ON CONFLICT(id) DO UPDATE SET name = 'u'", string(nr)},
		{"WITH d AS (SELECT 1) DELETE FROM t WHERE id = 3", string(nr)},
		{"CREATE TABLE x(a)", string(nr)},
		{"CREATE TEMP TABLE tx(a)", string(nr)},
		{"CREATE INDEX t_name ON t(name)", string(nr)},
		{"CREATE VIEW w AS SELECT 1 AS one", string(nr)},
		{"CREATE TRIGGER tr AFTER INSERT ON n BEGIN DELETE FROM t; END", string(nr)},
		{"ALTER TABLE t ADD COLUMN z TEXT", string(nr)},
		{"DROP INDEX n_i", string(nr)},
		{"DROP VIEW v", string(nr)},
		{"ATTACH DATABASE '" + filepath.Join(dir, "other.db") + "' AS o", string(nr)},
		{"PRAGMA user_version = 7", string(ns)},
		{"PRAGMA application_id = 7", string(ns)},
		{"PRAGMA writable_schema = 1", string(ns)},
		{"PRAGMA query_only = 0", string(ns)},
		{"PRAGMA trusted_schema = 1", string(ns)},
		{"PRAGMA journal_mode = WAL", string(ns)},
		{"PRAGMA auto_vacuum = FULL", string(ns)},
		{"REINDEX", string(nr)},
		{"ANALYZE", string(nr)},
		{"VACUUM", string(nr)},
		{"VACUUM INTO '" + filepath.Join(dir, "copy.db") + "'", string(nr)},
		{"DROP TABLE n", string(nr)},
		{"ALTER TABLE t RENAME TO t2", string(nr)},
	}
}

// fileState is everything a write could change, read with a plain
// connection: the catalog, the rows, the header pragmas, the file's bytes
// and the files beside it.
func fileState(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var catalog, rows string
	var userVersion, appID, schemaVersion int64
	var journal string
	if err := db.QueryRow(`SELECT
		(SELECT group_concat(type || ':' || name || ':' || coalesce(sql, ''), '|') FROM (SELECT * FROM sqlite_master ORDER BY name)),
		(SELECT count(*) || ':' || coalesce(sum(id), 0) || ':' || coalesce(group_concat(coalesce(name, '-'), ','), '') FROM t) ||
		 '/' || (SELECT count(*) || ':' || sum(i) FROM n),
		(SELECT user_version FROM pragma_user_version), (SELECT application_id FROM pragma_application_id),
		(SELECT schema_version FROM pragma_schema_version), (SELECT journal_mode FROM pragma_journal_mode)`).
		Scan(&catalog, &rows, &userVersion, &appID, &schemaVersion, &journal); err != nil {
		rows = "unreadable: " + err.Error() // a write renamed or dropped what the state reads
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	sort.Strings(files)
	return strings.Join([]string{catalog, rows, strconv.FormatInt(userVersion, 10), strconv.FormatInt(appID, 10), strconv.FormatInt(schemaVersion, 10), journal,
		digest(t, path), strings.Join(files, ",")}, " | ")
}

// authCode is the SQLite result code of err: SQLITE_AUTH for a statement the
// authorizer denied at compile time.
func authCode(err error) int {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return -1
	}
	return se.Code() & 0xff
}

// copyFile copies the fixture so the control can write to its own copy.
func copyFile(t *testing.T, from string) string {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(t.TempDir(), "control.db")
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return to
}

// TestAuthorizerAloneRefusesWrites opens a WRITABLE connection — no
// mode=ro, no query_only, no guard in front — with only the authorizer the
// engine installs, and sends it every kind of write. Each must be denied
// while SQLite compiles it (SQLITE_AUTH, with the authorizer's own refusal
// code), and the file, its header and the directory must not change. The
// same statements, on a copy of the file without the authorizer, all run:
// the denials are the layer's.
func TestAuthorizerAloneRefusesWrites(t *testing.T) {
	path := fixture(t)
	dir := filepath.Dir(path)
	ctx := context.Background()

	// The control: every statement is a write SQLite runs when nothing stops it.
	control := copyFile(t, path)
	before := fileState(t, control)
	plain, err := sql.Open("sqlite", control)
	if err != nil {
		t.Fatal(err)
	}
	plain.SetMaxOpenConns(1)
	for _, w := range layerWrites(t.TempDir()) {
		if _, err := plain.ExecContext(ctx, w.sql); err != nil {
			t.Fatalf("control: %s fails on a writable file without the authorizer (%v); the statement is not a write", w.sql, err)
		}
	}
	plain.Close()
	if fileState(t, control) == before {
		t.Fatal("control: the writes changed nothing; the state check cannot see them")
	}

	// Only the authorizer: the engine's own driver hook on a writable DSN.
	p := guardsqlite.NormalizePolicy(guard.Policy{DefaultSchema: DefaultSchema})
	drv := &sqlite.Driver{}
	drv.RegisterConnectionHook(func(conn sqlite.ExecQuerierContext, _ string) error {
		return conn.(sqlite.AuthorizerRegisterer).RegisterAuthorizer(guardsqlite.Authorizer(p, nil))
	})
	db := sql.OpenDB(connector{drv: drv, dsn: path})
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	before = fileState(t, path)
	for _, w := range layerWrites(dir) {
		rec := &guardsqlite.Record{}
		if err := setAuthorizer(conn, guardsqlite.Authorizer(p, rec)); err != nil {
			t.Fatal(err)
		}
		_, err := conn.ExecContext(ctx, w.sql)
		if code := authCode(err); code != sqlite3.SQLITE_AUTH {
			t.Errorf("%s: err = %v (code %d), want SQLITE_AUTH from the authorizer", w.sql, err, code)
			continue
		}
		ref, what := rec.Denied()
		if ref == nil || string(ref.Code) != w.code || what == "" {
			t.Errorf("%s: the authorizer's denial %+v (%q), want code %s", w.sql, ref, what, w.code)
		}
	}
	// Reads still compile under it: the layer denies writes, not everything.
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 3 {
		t.Fatalf("a read under the authorizer alone: %d, %v", n, err)
	}
	conn.Close()
	db.Close()
	if after := fileState(t, path); after != before {
		t.Fatalf("the file changed under the authorizer alone:\n before %s\n after  %s", before, after)
	}
}

// TestEngineConnectionsCarryAuthorizer sends writes straight to the
// engine's own pooled connections, below the guard, on every connection the
// pool holds and again after reads and an inventory read swapped authorizers:
// each is denied while compiling (SQLITE_AUTH), before mode=ro could refuse
// it when it runs (SQLITE_READONLY). A connection without the authorizer
// would show the read-only error instead.
func TestEngineConnectionsCarryAuthorizer(t *testing.T) {
	path := fixture(t)
	e := open(t, path)
	ctx := context.Background()
	before := fileState(t, path)
	check := func(when string) {
		t.Helper()
		conns := make([]*sql.Conn, MaxConns)
		for i := range conns {
			c, err := e.db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns[i] = c
		}
		for i, c := range conns {
			for _, w := range layerWrites(filepath.Dir(path)) {
				_, err := c.ExecContext(ctx, w.sql)
				if code := authCode(err); code != sqlite3.SQLITE_AUTH {
					t.Errorf("%s, connection %d: %s: err = %v (code %d), want SQLITE_AUTH", when, i, w.sql, err, code)
				}
			}
			c.Close()
		}
	}
	check("at open")
	for range MaxConns {
		if _, err := read(t, e, "select count(*) from t"); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := e.Relations(ctx, engine.Request{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Describe(ctx, engine.Request{Timeout: 5 * time.Second}, cat.Relations); err != nil {
		t.Fatal(err)
	}
	check("after reads and an inventory read")
	if after := fileState(t, path); after != before {
		t.Fatalf("the file changed:\n before %s\n after  %s", before, after)
	}
}

// TestReadOnlyModeAlone opens the file with the engine's own DSN less one
// of its two read-only settings — mode=ro without query_only, then
// query_only without mode=ro — with the plain driver (no authorizer, no
// guard), and sends every write to the main database: each setting alone
// makes SQLite refuse each with SQLITE_READONLY. (What they do not hold — a
// TEMP table, ATTACH or VACUUM INTO writing another file — the authorizer
// and the attached-database limit hold: the tests above and TestLimitsAlone.)
func TestReadOnlyModeAlone(t *testing.T) {
	without := func(drop func(url.Values)) string {
		u, err := url.Parse(dsn(fixture(t)))
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		drop(q)
		u.RawQuery = q.Encode()
		return u.String()
	}
	for name, d := range map[string]string{
		"mode=ro alone": without(func(q url.Values) {
			q["_pragma"] = slices.DeleteFunc(q["_pragma"], func(p string) bool { return strings.HasPrefix(p, "query_only") })
		}),
		"query_only alone": without(func(q url.Values) { q.Del("mode") }),
	} {
		t.Run(name, func(t *testing.T) {
			u, _ := url.Parse(d)
			path := u.Path
			db, err := sql.Open("sqlite", d)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			before := fileState(t, path)
			for _, q := range []string{
				"INSERT INTO t(id) VALUES (9)",
				"UPDATE t SET name = 'x'",
				"DELETE FROM n WHERE i > 900",
				"REPLACE INTO t(id, name) VALUES (1, 'z')",
				"CREATE TABLE x(a)",
				"CREATE INDEX t_name ON t(name)",
				"CREATE VIEW w AS SELECT 1 AS one",
				"ALTER TABLE t ADD COLUMN z TEXT",
				"DROP VIEW v",
				"DROP TABLE n",
				"PRAGMA user_version = 7",
				"REINDEX",
				"ANALYZE",
				"VACUUM",
			} {
				_, err := db.ExecContext(context.Background(), q)
				if code := authCode(err); code != sqlite3.SQLITE_READONLY {
					t.Errorf("%s (%s): %v (code %d), want SQLITE_READONLY", q, d, err, code)
				}
			}
			if after := fileState(t, path); after != before {
				t.Fatalf("the file changed:\n before %s\n after  %s", before, after)
			}
		})
	}
}

// TestLimitsAlone applies the engine's sqlite3_limit bounds to a writable
// connection with nothing else: ATTACH fails (no database may be attached,
// so no file is created or read beside the one opened), and a value longer
// than the limit cannot be built.
func TestLimitsAlone(t *testing.T) {
	path := fixture(t)
	ctx := context.Background()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := setLimits(conn, 4096); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other.db")
	_, err = conn.ExecContext(ctx, "ATTACH DATABASE '"+other+"' AS o")
	if err == nil || !strings.Contains(err.Error(), "too many attached databases") {
		t.Errorf("ATTACH under the limits: %v, want too many attached databases", err)
	}
	if _, err := os.Stat(other); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ATTACH created %s: %v", other, err)
	}
	var b []byte
	err = conn.QueryRowContext(ctx, "SELECT zeroblob(8192)").Scan(&b)
	if !tooBig(err) {
		t.Errorf("a value over the length limit: %v, want SQLITE_TOOBIG", err)
	}
}
