package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/refuse"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// TestLargeValuesBoundedWhileReading: a value over the operation's memory
// (SQLite has no repeat(); printf builds one as long) is stopped by SQLite
// at the limit (SQLITE_LIMIT_LENGTH), built by the
// statement or stored, and ends as a too-large result — refused or
// truncated per the profile — while the process stays small, even with
// eight such reads at once.
func TestLargeValuesBoundedWhileReading(t *testing.T) {
	path := fixture(t)
	e, err := OpenConnection(context.Background(), connections.Connection{ID: "f", Engine: contracts.EngineSQLite, Path: path},
		engine.Options{OperationMemory: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got := e.(*Engine).valueLimit; got != 256<<10 {
		t.Fatalf("value limit %d, want the operation's memory", got)
	}
	big := rowset.Limits{MaxRows: 200, MaxBytes: 4 << 20}
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.Read(context.Background(), engine.Request{SQL: "select printf('%.*c', 500000000, 'x') AS v", Limits: big, Timeout: 10 * time.Second})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		var tooLarge *rowset.TooLargeError
		if !errors.As(err, &tooLarge) || tooLarge.Limit != 256<<10 {
			t.Errorf("a 500 MB value: %v, want too large at the value limit", err)
		}
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapSys) - int64(before.HeapSys); grew > 64<<20 {
		t.Errorf("the heap grew by %d MB reading eight oversized values", grew>>20)
	}
	for _, q := range []string{"select zeroblob(300000)", "select group_concat(printf('%.1000c', 'x')) from n", "select printf('%.500000000c', 'x')"} {
		_, err := e.Read(context.Background(), engine.Request{SQL: q, Limits: big, Timeout: 10 * time.Second})
		var tooLarge *rowset.TooLargeError
		if !errors.As(err, &tooLarge) {
			t.Errorf("%s: %v, want too large", q, err)
		}
		res, err := e.Read(context.Background(), engine.Request{SQL: q, Limits: rowset.Limits{MaxRows: 200, MaxBytes: 4 << 20, Truncate: true}, Timeout: 10 * time.Second})
		if err != nil || !res.Rows.Truncated {
			t.Errorf("%s truncating: %v, %+v", q, err, res.Rows)
		}
	}
	// Under the limit, values still read.
	res, err := e.Read(context.Background(), engine.Request{SQL: "select length(printf('%.200000c', 'x')) AS n", Limits: big, Timeout: 10 * time.Second})
	if err != nil || res.Rows.Rows[0][0] != int64(200000) {
		t.Errorf("a value under the limit: %v, %+v", err, res.Rows)
	}
}

// TestCancelInterruptsStatement: cancelling the context stops a statement
// that is running at SQLite, promptly, and the connection serves again.
func TestCancelInterruptsStatement(t *testing.T) {
	e := open(t, fixture(t))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := e.Read(ctx, engine.Request{
		SQL:    "with recursive c(x) as (select 1 union all select x + 1 from c where x < 1000000000) select count(*) from c",
		Limits: refuseLimits, Timeout: time.Minute})
	wantClass(t, err, contracts.DBCancelled)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("cancelled after %s", took)
	}
	if _, err := read(t, e, "select count(*) from n"); err != nil {
		t.Errorf("after the cancel: %v", err)
	}
}

// TestSymlinkRefused: a path that is a symbolic link, or lies under one, is
// refused at open, as the SQLite inspection rules require; so is a file
// whose sidecar has other hard links.
func TestSymlinkRefused(t *testing.T) {
	path := fixture(t)
	dir := t.TempDir()
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(path, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if _, err := Open(context.Background(), link, guard.Policy{}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a symlinked file opened: %v", err)
	}
	linkDir := filepath.Join(dir, "d")
	if err := os.Symlink(filepath.Dir(path), linkDir); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), filepath.Join(linkDir, filepath.Base(path)), guard.Policy{}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a file under a symlinked directory opened: %v", err)
	}
	// A sidecar with another hard link.
	if err := os.WriteFile(filepath.Join(dir, "other"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "other"), path+"-journal"); err != nil {
		t.Skip("no hard links here:", err)
	}
	if _, err := Open(context.Background(), path, guard.Policy{}); err == nil || !strings.Contains(err.Error(), "-journal") {
		t.Errorf("a file with a hard-linked sidecar opened: %v", err)
	}
	os.Remove(path + "-journal")
	if _, err := OpenConnection(context.Background(), connections.Connection{ID: "f", Engine: contracts.EngineSQLite, Path: path}, engine.Options{}); err != nil {
		t.Errorf("the plain file: %v", err)
	}
}

// writeDB writes a one-table database at path whose table x holds v.
func writeDB(t *testing.T, path, v string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE x (v TEXT); INSERT INTO x VALUES ('" + v + "')"); err != nil {
		t.Fatal(err)
	}
}

// TestReplacedOrDeletedFile: a file replaced under the connection's path is
// read from the new file at the next operation, never the old copy; a
// deleted one fails as unavailable, and reads again once a file is back;
// the path turned into a symbolic link fails too.
func TestReplacedOrDeletedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "live.db")
	writeDB(t, path, "old")
	e := open(t, path)
	value := func() (string, error) {
		res, err := read(t, e, "select v from x")
		if err != nil {
			return "", err
		}
		return res.Rows.Rows[0][0].(string), nil
	}
	// Several pooled connections hold the old file.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); value() }()
	}
	wg.Wait()
	if v, err := value(); v != "old" || err != nil {
		t.Fatalf("before: %q, %v", v, err)
	}
	// Replaced the way deployments replace a file: a new one renamed over it.
	writeDB(t, filepath.Join(dir, "new.db"), "new")
	if err := os.Rename(filepath.Join(dir, "new.db"), path); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if v, err := value(); v != "new" || err != nil {
			t.Fatalf("read %d after the replace: %q, %v", i, v, err)
		}
	}
	cat, err := e.Relations(context.Background(), engine.Request{Timeout: time.Second})
	if err != nil || relationNames(cat.Relations) != "x" {
		t.Fatalf("relations after the replace: %v, %+v", err, cat.Relations)
	}
	// Deleted: unavailable, with the path named.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	_, err = value()
	if d := wantClass(t, err, contracts.DBUnavailable); !strings.Contains(d.Message, "gone") || !strings.Contains(d.Message, path) {
		t.Errorf("message %q", d.Message)
	}
	_, err = e.Relations(context.Background(), engine.Request{Timeout: time.Second})
	wantClass(t, err, contracts.DBUnavailable)
	_, err = e.Describe(context.Background(), engine.Request{Timeout: time.Second}, cat.Relations)
	wantClass(t, err, contracts.DBUnavailable)
	// A file that is no database: unavailable, and tried again next time.
	if err := os.WriteFile(path, []byte("not a database, not at all, not even close"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = value()
	wantClass(t, err, contracts.DBUnavailable)
	// Back again.
	os.Remove(path)
	writeDB(t, path, "back")
	if v, err := value(); v != "back" || err != nil {
		t.Fatalf("after the file is back: %q, %v", v, err)
	}
	// The path becomes a symbolic link to another database.
	other := filepath.Join(dir, "other.db")
	writeDB(t, other, "other")
	os.Remove(path)
	if err := os.Symlink(other, path); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	_, err = value()
	if d := wantClass(t, err, contracts.DBUnavailable); !strings.Contains(d.Message, "symbolic link") {
		t.Errorf("message %q", d.Message)
	}
}

// TestSystemCatalogsAtRunTime: the sqlite_ tables are system catalogs,
// readable only when a pattern names them — also through a table-valued
// pragma, whose argument SQLite compiles only while the statement runs —
// and names follow SQLite's rules (ASCII case folding, no schema is main,
// a recursive CTE's name is no table).
func TestSystemCatalogsAtRunTime(t *testing.T) {
	path := fixture(t)
	e := openConn(t, connections.Connection{ID: "f", Engine: contracts.EngineSQLite, Path: path,
		Readable: []string{"T", "N"}, LargeTables: map[string]string{"N": "I"}})
	for _, q := range []string{
		"select id from t",
		"select id from MAIN.T",
		"select * from n where I >= 990",
		"WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r WHERE n<5) SELECT * FROM r",
		"with recursive r(x) as (select 1 union all select x + 1 from r where x < 5) select t.id from t join r on r.x = t.id",
	} {
		if _, err := read(t, e, q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	for _, q := range []string{"select * from sqlite_master", "select * from sqlite_schema", "pragma table_list",
		"select * from n", "select count(*) from n left join t on t.id = n.i and n.i >= 990"} {
		_, err := read(t, e, q)
		var ref *contracts.Refusal
		if !errors.As(err, &ref) {
			t.Errorf("%s: %v, want a refusal", q, err)
		}
	}
	for _, q := range []string{"select name from pragma_table_list", "select name from pragma_table_info('sqlite_master')"} {
		_, err := read(t, e, q)
		wantClass(t, err, contracts.DBPermission)
	}
	// SELEC is no statement SQLite knows: unparsable.
	_, err := read(t, e, "SELEC 1")
	wantRefusal(t, err, refuse.Unparsable)
}
