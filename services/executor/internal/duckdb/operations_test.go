package duckdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

func chinookCopy(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "..", "..", "..", "..", "shared", "datasets", "chinook", "chinook.duckdb")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Skipf("chinook not present: %v", err)
	}
	path := filepath.Join(t.TempDir(), "chinook.duckdb")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func opsReq() engine.Request { return engine.Request{Timeout: 10 * time.Second} }

// Each kind on Chinook: the supported ones answer rows of the declared
// width, sessions and slow-queries are refused with their reason, and the
// file is unchanged.
func TestOperationsChinook(t *testing.T) {
	path := chinookCopy(t)
	before := digest(t, path)
	e := open(t, path, nil, nil)
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
		// Chinook's DuckDB copy holds no index and no key constraint: an
		// empty index-stats is its true answer.
		if (len(r.Rows) == 0) != (kind == contracts.OpsIndexStats) || len(r.Rows) != len(r.Schemas) || r.Statements != 1 {
			t.Fatalf("%s: %d rows, %d schemas, %d statements", kind, len(r.Rows), len(r.Schemas), r.Statements)
		}
		for _, row := range r.Rows {
			if len(row) != len(contracts.OperationsColumns[kind]) {
				t.Fatalf("%s: row %v, want %d values", kind, row, len(contracts.OperationsColumns[kind]))
			}
		}
		t.Logf("%s: %v", kind, r.Rows[:min(3, len(r.Rows))])
	}
	e.Close()
	if digest(t, path) != before {
		t.Fatal("chinook changed")
	}
}

// A table the readable patterns hide, and its index, are never named; a
// hostile name is carried as data; schema narrows in the statement.
func TestOperationsHiddenAndHostileNames(t *testing.T) {
	hostile := "x\"; DROP TABLE t; --\nnew line"
	q := `"` + strings.ReplaceAll(hostile, `"`, `""`) + `"`
	path := filepath.Join(t.TempDir(), "ops.duckdb")
	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		"CREATE TABLE t (id INTEGER PRIMARY KEY, v VARCHAR)",
		"CREATE INDEX t_v ON t (v)",
		"CREATE TABLE secret_keys (k VARCHAR)",
		"CREATE INDEX secret_keys_k ON secret_keys (k)",
		"CREATE TABLE " + q + " (a INTEGER)",
		"CREATE INDEX " + q[:len(q)-1] + ` ix" ON ` + q + " (a)",
		"CREATE SCHEMA other",
		"CREATE TABLE other.o (a INTEGER)",
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	db.Close()
	before := digest(t, path)
	e := open(t, path, []string{"main.t", "main.x*", "other.*"}, nil)
	for _, kind := range []contracts.OperationsKind{contracts.OpsTableStats, contracts.OpsIndexStats} {
		r, err := e.Operations(context.Background(), opsReq(), kind)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		b, _ := json.Marshal(r.Rows)
		if strings.Contains(strings.ToLower(string(b)), "secret") || r.Hidden != 1 {
			t.Errorf("%s: %s (hidden %d): the hidden table is named or not counted", kind, b, r.Hidden)
		}
		h, _ := json.Marshal(hostile)
		if !strings.Contains(string(b), string(h[1:len(h)-1])) {
			t.Errorf("%s: the hostile name is not carried as written: %s", kind, b)
		}
	}
	narrow := opsReq()
	narrow.Schema = "other"
	r, err := e.Operations(context.Background(), narrow, contracts.OpsTableStats)
	if err != nil || len(r.Rows) != 1 || r.Rows[0][1] != "o" {
		t.Errorf("narrowed to other: %v %v", r.Rows, err)
	}
	for _, hostileSchema := range []string{"main'; DROP TABLE t; --", `main"; DROP TABLE t; --`} {
		narrow.Schema = hostileSchema
		for _, kind := range []contracts.OperationsKind{contracts.OpsTableStats, contracts.OpsIndexStats} {
			if r, err := e.Operations(context.Background(), narrow, kind); err != nil || len(r.Rows) != 0 {
				t.Errorf("%s narrowed to %q: %v %v", kind, hostileSchema, r.Rows, err)
			}
		}
	}
	e.Close()
	if digest(t, path) != before {
		t.Fatal("the file changed")
	}
}
