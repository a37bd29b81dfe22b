package duckdb

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
	"github.com/sondehq/sonde/pkg/guard/duckdb/duckdbtest"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// TestMemoryLimitFromOptions: the instance's memory_limit comes from the
// executor's per-operation memory.
func TestMemoryLimitFromOptions(t *testing.T) {
	if got := MemoryLimit(engine.Options{}); got != 512<<20 {
		t.Errorf("default %d", got)
	}
	if got := MemoryLimit(engine.Options{OperationMemory: 1 << 20}); got != MinMemoryLimit {
		t.Errorf("floor %d", got)
	}
	e, err := OpenConnection(context.Background(), connections.Connection{ID: "d", Engine: contracts.EngineDuckDB, Path: fixture(t)},
		engine.Options{OperationMemory: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var limit string
	if err := e.(*Engine).db.QueryRow("SELECT current_setting('memory_limit')").Scan(&limit); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(limit, "128") {
		t.Errorf("memory_limit %s, want 128 MiB (16 MiB per operation, %d connections)", limit, MaxConns)
	}
}

// TestLargeValuesBounded: eight reads at once, each building a 500 MB value,
// are refused before anything runs, and the process does not grow; a
// stored value larger than the result's bound ends as too large.
func TestLargeValuesBounded(t *testing.T) {
	path := fixture(t)
	w, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Exec("CREATE TABLE wide AS SELECT repeat('x', 800000) AS v FROM range(4)"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	e, err := OpenConnection(context.Background(), connections.Connection{ID: "d", Engine: contracts.EngineDuckDB, Path: path},
		engine.Options{OperationMemory: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.Read(context.Background(), read("SELECT repeat('x', 500000000) AS v"))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		var ref *contracts.Refusal
		if !errors.As(err, &ref) || ref.Code != contracts.RefuseResultTooLarge || !strings.Contains(ref.Message, "repeat") {
			t.Errorf("repeat('x', 5e8): %v, want result_too_large", err)
		}
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapSys) - int64(before.HeapSys); grew > 64<<20 {
		t.Errorf("the heap grew by %d MB", grew>>20)
	}
	_, err = e.Read(context.Background(), read("SELECT v FROM wide"))
	var tooLarge *rowset.TooLargeError
	if !errors.As(err, &tooLarge) {
		t.Errorf("stored values past the result's bound: %v, want too large", err)
	}
	req := read("SELECT v FROM wide")
	req.Limits = truncateLimits
	res, err := e.Read(context.Background(), req)
	if err != nil || !res.Rows.Truncated {
		t.Errorf("truncating: %v, %+v", err, res.Rows)
	}
}

// TestCancelInterruptsRecursion: cancelling the context stops a recursive
// CTE counting to 1e9 at DuckDB, promptly.
func TestCancelInterruptsRecursion(t *testing.T) {
	e := open(t, fixture(t), nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	req := read("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) SELECT count(*) FROM c")
	req.Timeout = time.Minute
	_, err := e.Read(ctx, req)
	var dbErr *contracts.DBError
	if !errors.As(err, &dbErr) || dbErr.Class != contracts.DBCancelled {
		t.Fatalf("cancelled recursion: %v, want cancelled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stopped after %s", d)
	}
	if _, err := e.Read(context.Background(), read("SELECT count(*) FROM orders")); err != nil {
		t.Fatal(err)
	}
}

// TestSystemViewsRefusedUnderMainStar: under main.*, DuckDB's own views —
// the file's path, the settings, the catalog — are refused against a real
// file, and the connection's own tables read.
func TestSystemViewsRefusedUnderMainStar(t *testing.T) {
	p := duckdbtest.MainStarPolicy()
	e := open(t, fixture(t), p.Readable, p.LargeTables)
	for _, q := range duckdbtest.SystemUnderMainStar {
		_, err := e.Read(context.Background(), read(q))
		var ref *contracts.Refusal
		if !errors.As(err, &ref) || ref.Code != contracts.RefuseTableNotReadable {
			t.Errorf("%q: %v, want table_not_readable", q, err)
		}
	}
	if _, err := e.Read(context.Background(), read("SELECT * FROM secrets")); err != nil {
		t.Errorf("main.secrets under main.*: %v", err)
	}
}

// writeDuckDB writes a one-table database at path whose table x holds v.
func writeDuckDB(t *testing.T, path, v string) {
	t.Helper()
	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE x (v VARCHAR); INSERT INTO x VALUES ('" + v + "'); CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReplacedOrDeletedFile: a file replaced under the path is read from the
// new file at the next operation, never the old copy; a deleted one fails as
// unavailable, and reads again once a file is back.
func TestReplacedOrDeletedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "live.duckdb")
	writeDuckDB(t, path, "old")
	e := open(t, path, nil, nil)
	value := func() (string, error) {
		res, err := e.Read(context.Background(), read("SELECT v FROM x"))
		if err != nil {
			return "", err
		}
		return res.Rows.Rows[0][0].(string), nil
	}
	if v, err := value(); v != "old" || err != nil {
		t.Fatalf("before: %q, %v", v, err)
	}
	next := filepath.Join(dir, "next.duckdb")
	writeDuckDB(t, next, "new")
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if v, err := value(); v != "new" || err != nil {
			t.Fatalf("read %d after the replace: %q, %v", i, v, err)
		}
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	_, err := value()
	var dbErr *contracts.DBError
	if !errors.As(err, &dbErr) || dbErr.Class != contracts.DBUnavailable || !strings.Contains(dbErr.Message, "gone") {
		t.Fatalf("deleted: %v, want unavailable", err)
	}
	// A file that is no database: unavailable, and tried again next time.
	if err := os.WriteFile(next, []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	if _, err := value(); !errors.As(err, &dbErr) || dbErr.Class != contracts.DBUnavailable {
		t.Fatalf("not a database: %v, want unavailable", err)
	}
	// (Written beside it and renamed: this process's driver shares one
	// instance per path, and the engine's still holds the deleted file.)
	writeDuckDB(t, next, "back")
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	if v, err := value(); v != "back" || err != nil {
		t.Fatalf("after the file is back: %q, %v", v, err)
	}
}
