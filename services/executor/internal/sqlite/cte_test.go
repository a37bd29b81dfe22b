package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/connections"
)

// TestCTEReadWithoutColumns: through the engine, on a real file, a CTE
// read with none of its columns used runs (SQLite reports it as it reports
// count(*) of an unqualified table, at compile and again when the statement
// is prepared to run); a table of the same name as a CTE defined elsewhere
// in the statement, and a table read through a view, are still held to the
// patterns.
func TestCTEReadWithoutColumns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cte.db")
	w, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"CREATE TABLE \"Genre\" (id INTEGER PRIMARY KEY, name TEXT)",
		"INSERT INTO genre VALUES (1, 'rock'), (2, 'jazz')",
		"CREATE TABLE secret (token TEXT)",
		"INSERT INTO secret VALUES ('s1'), ('s2'), ('s3')",
		"CREATE VIEW v_count AS SELECT count(*) n FROM secret",
		"CREATE VIEW v_cte AS WITH k AS (SELECT 1 UNION ALL SELECT 2) SELECT count(*) n FROM k",
	} {
		if _, err := w.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	w.Close()
	e := openConn(t, connections.Connection{ID: "c", Engine: contracts.EngineSQLite, Path: path,
		Readable: []string{"Genre", "Track", "Invoice", "V_Count", "v_cte"}})
	for q, want := range map[string]string{
		"WITH c AS (SELECT 1 x) SELECT count(*) FROM c":                                                                            "1",
		"WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM r WHERE x<5) SELECT count(*) FROM r":                           "5",
		"WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM r WHERE x<5) SELECT group_concat(hex(zeroblob(5)), '') FROM r": "00000000000000000000000000000000000000000000000000",
		"WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT 1 FROM r LIMIT 4) SELECT count(*) FROM r":                               "4",
		"WITH d AS (WITH e AS (SELECT 1 UNION ALL SELECT 2) SELECT 1 FROM e) SELECT count(*) FROM d":                               "2",
		"SELECT count(*) FROM genre, (WITH c AS (SELECT 1) SELECT 1 FROM c)":                                                       "2",
		"SELECT n FROM v_cte": "2",
		"SELECT (WITH c AS (SELECT 1) SELECT count(*) FROM c)": "1",
	} {
		res, err := read(t, e, q)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		if len(res.Rows.Rows) != 1 || fmt.Sprint(res.Rows.Rows[0][0]) != want {
			t.Errorf("%s: rows %v, want %s", q, res.Rows.Rows, want)
		}
	}
	for _, q := range []string{
		"SELECT 1 FROM secret, (WITH secret AS (SELECT 1) SELECT 1 FROM secret)",
		"SELECT (WITH secret AS (SELECT 1) SELECT count(*) FROM secret) FROM secret",
		"WITH secret AS (SELECT 1) SELECT count(*) FROM main.secret",
		"WITH d AS (SELECT 1) SELECT count(*) FROM secret, d",
		"WITH secret AS (SELECT 1) SELECT n FROM v_count",
	} {
		res, err := read(t, e, q)
		var ref *contracts.Refusal
		if !errors.As(err, &ref) || ref.Code != contracts.RefuseTableNotReadable {
			t.Errorf("%s: %v (rows %v), want %s", q, err, res.Rows, contracts.RefuseTableNotReadable)
		}
	}
}
