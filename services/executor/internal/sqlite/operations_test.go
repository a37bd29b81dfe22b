package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// chinookCopy copies the shared Chinook SQLite file into the test's
// directory, or skips the test when the dataset is not present.
func chinookCopy(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "..", "..", "..", "..", "shared", "datasets", "chinook", "chinook.sqlite")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Skipf("chinook not present: %v", err)
	}
	path := filepath.Join(t.TempDir(), "chinook.sqlite")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func opsReq() engine.Request { return engine.Request{Timeout: 5 * time.Second} }

// Each kind on Chinook: the supported ones answer rows of the declared
// width, the two a file cannot give are refused with their reason, and the
// file is unchanged.
func TestOperationsChinook(t *testing.T) {
	path := chinookCopy(t)
	execFile(t, path, "ANALYZE")
	before := digest(t, path)
	e := open(t, path)
	for _, kind := range contracts.OperationsKinds {
		r, err := e.Operations(context.Background(), opsReq(), kind)
		var ku *engine.KindUnsupportedError
		switch kind {
		case contracts.OpsSessions, contracts.OpsSlowQueries:
			if !errors.As(err, &ku) || ku.Reason == "" || !strings.Contains(ku.Fix, "table-stats") {
				t.Errorf("%s: %v, want kind unsupported with its reason", kind, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if len(r.Rows) == 0 || len(r.Rows) != len(r.Schemas) || r.Statements == 0 {
			t.Fatalf("%s: %d rows, %d schemas, %d statements", kind, len(r.Rows), len(r.Schemas), r.Statements)
		}
		for _, row := range r.Rows {
			if len(row) != len(contracts.OperationsColumns[kind]) {
				t.Fatalf("%s: row %v, want %d values", kind, row, len(contracts.OperationsColumns[kind]))
			}
		}
		t.Logf("%s: %v %v", kind, r.Rows[:min(3, len(r.Rows))], r.Notes)
	}
	stats, err := e.Operations(context.Background(), opsReq(), contracts.OpsTableStats)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, row := range stats.Rows {
		if row[1] == "Track" {
			found = true
			if row[2] != int64(3503) || row[3] == nil || row[3].(int64) <= 0 {
				t.Errorf("Track: %v, want 3503 rows from sqlite_stat1 and its bytes", row)
			}
		}
	}
	if !found {
		t.Error("table-stats does not list Track")
	}
	health, err := e.Operations(context.Background(), opsReq(), contracts.OpsHealth)
	if err != nil {
		t.Fatal(err)
	}
	if !hasRow(health.Rows, "quick_check", "ok") {
		t.Errorf("health %v lacks quick_check ok", health.Rows)
	}
	e.Close()
	if digest(t, path) != before {
		t.Fatal("chinook changed")
	}
}

func hasRow(rows [][]any, vals ...any) bool {
	for _, row := range rows {
		ok := true
		for i, v := range vals {
			if row[i] != v {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// Without ANALYZE, rows is NULL (never counted), and it says why.
func TestOperationsNoStat1(t *testing.T) {
	e := open(t, chinookCopy(t))
	r, err := e.Operations(context.Background(), opsReq(), contracts.OpsTableStats)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range r.Rows {
		if row[2] != nil {
			t.Fatalf("row %v: rows counted without ANALYZE", row)
		}
	}
	if !strings.Contains(strings.Join(r.Notes, " "), "ANALYZE has never run") {
		t.Errorf("notes %v", r.Notes)
	}
}

// A table the readable patterns hide, and its indexes, are never named in
// a reading, and a hostile name is carried as data, the file unchanged.
func TestOperationsHiddenAndHostileNames(t *testing.T) {
	hostile := "x\"; DROP TABLE t; --\nnew line"
	path := writeFile(t,
		`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE)`,
		`CREATE TABLE secret_keys (k TEXT)`,
		`CREATE INDEX secret_keys_k ON secret_keys (k)`,
		`CREATE TABLE "`+strings.ReplaceAll(hostile, `"`, `""`)+`" (a)`,
		`CREATE INDEX "ix `+strings.ReplaceAll(hostile, `"`, `""`)+`" ON "`+strings.ReplaceAll(hostile, `"`, `""`)+`" (a)`,
		`INSERT INTO t (v) VALUES ('a'), ('b')`, `ANALYZE`)
	before := digest(t, path)
	e, err := Open(context.Background(), path, guard.Policy{Readable: []string{"t", "x*"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, kind := range []contracts.OperationsKind{contracts.OpsTableStats, contracts.OpsIndexStats, contracts.OpsStorage, contracts.OpsHealth} {
		r, err := e.Operations(context.Background(), opsReq(), kind)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		all := strings.ToLower(asJSON(r.Rows))
		if strings.Contains(all, "secret") {
			t.Errorf("%s names the hidden table: %s", kind, all)
		}
		if kind != contracts.OpsHealth && r.Hidden == 0 {
			t.Errorf("%s: hidden not counted", kind)
		}
		if kind == contracts.OpsTableStats && !strings.Contains(asJSON(r.Rows), asJSON(hostile)) {
			t.Errorf("%s: the hostile name is not carried as written: %s", kind, asJSON(r.Rows))
		}
	}
	e.Close()
	if digest(t, path) != before {
		t.Fatal("the file changed")
	}
}

// The operational authorizer lets nothing else through: a pragma given a
// value, and a write, are denied even on the engine's own connection.
func TestOperationsAuthorizerDenies(t *testing.T) {
	path := writeFile(t, `CREATE TABLE t (a)`)
	e := open(t, path)
	var cat engine.Catalog
	for _, stmt := range []string{
		`SELECT * FROM pragma_journal_mode('delete')`,
		`PRAGMA journal_mode = delete`,
		`SELECT * FROM pragma_quick_check(1000000)`,
		`SELECT * FROM pragma_integrity_check()`,
		`DELETE FROM t`,
	} {
		err := e.operations(context.Background(), opsReq(), &cat, func(c *catalogRun) error {
			return c.query(stmt, nil, nil)
		})
		if err == nil {
			t.Errorf("%s: ran under the operational authorizer", stmt)
		}
	}
}
