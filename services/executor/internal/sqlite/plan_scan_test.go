package sqlite

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/handover"
)

// A SCAN reads every row of the table or every entry of the index it
// names: a full scan, the index kept by name. Only a SEARCH is an index
// read. Real plans from SQLite, and the auto-execute gate weighing them.
func TestPlanScanThroughIndexIsFullScan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scan.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		"CREATE TABLE w (a INTEGER, b TEXT, c TEXT)",
		"CREATE INDEX w_a ON w(a)",
		"CREATE TABLE k (a INTEGER PRIMARY KEY, b TEXT) WITHOUT ROWID",
		"CREATE INDEX k_b ON k(b)",
		"INSERT INTO w VALUES (1, 'x', 'y'), (2, 'z', 'y')",
		"INSERT INTO k VALUES (1, 'x'), (2, 'z')",
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	db.Close()
	e := open(t, path)
	for _, c := range []struct {
		sql, access string
		gate        bool // the plan alone passes the gate
	}{
		{"SELECT a FROM w", "w:full scan:w_a", false},                // SCAN w USING COVERING INDEX w_a
		{"SELECT count(*) FROM w", "w:full scan:w_a", false},         // the same, counting
		{"SELECT a, b FROM w ORDER BY a", "w:full scan:w_a", false},  // SCAN w USING INDEX w_a
		{"SELECT b FROM k", "k:full scan:k_b", false},                // a WITHOUT ROWID table through its index
		{"SELECT a, b FROM w WHERE a > 1", "w:index:w_a", true},      // SEARCH w USING INDEX w_a (a>?)
		{"SELECT min(a) FROM w", "w:index:w_a", true},                // SEARCH w USING COVERING INDEX w_a
		{"SELECT b FROM k WHERE a = 1", "k:index:PRIMARY KEY", true}, // SEARCH k USING PRIMARY KEY (a=?)
		{"SELECT b FROM w WHERE rowid = 1", "w:index:INTEGER PRIMARY KEY", true},
	} {
		res, sum := mustPlan(t, e, c.sql)
		if got := access(sum); got != c.access {
			t.Errorf("%q: access %q, want %q (plan %v)", c.sql, got, c.access, res.Rows.Rows)
		}
		p := sum
		failed := handover.Failed(handover.Evidence{Engine: contracts.EngineSQLite, Executed: true, Plan: &p, ElapsedMs: 1})
		if pass := len(failed) == 0; pass != c.gate {
			t.Errorf("%q: gate passes %v, want %v (%v)", c.sql, pass, c.gate, failed)
		}
	}
}

// readDetail on the lines SQLite writes, including older and rarer forms.
func TestReadDetailScanSearch(t *testing.T) {
	for _, c := range []struct {
		line, rel string
		kind      contracts.AccessKind
		index     string
	}{
		{"SCAN t", "t", contracts.AccessFullScan, ""},
		{"SCAN TABLE t", "t", contracts.AccessFullScan, ""},
		{"SCAN t USING COVERING INDEX i", "t", contracts.AccessFullScan, "i"},
		{"SCAN TABLE t USING INDEX i", "t", contracts.AccessFullScan, "i"},
		{`SCAN "my t" AS a USING INDEX "my i"`, "my t", contracts.AccessFullScan, "my i"},
		{"SEARCH t USING INDEX i (a=?)", "t", contracts.AccessIndex, "i"},
		{"SEARCH t USING COVERING INDEX i (a>? AND a<?)", "t", contracts.AccessIndex, "i"},
		{"SEARCH t USING AUTOMATIC COVERING INDEX (a=?)", "t", contracts.AccessIndex, "automatic"},
		{"SEARCH t USING INTEGER PRIMARY KEY (rowid=?)", "t", contracts.AccessIndex, "INTEGER PRIMARY KEY"},
		{"SEARCH t USING PRIMARY KEY (a=?)", "t", contracts.AccessIndex, "PRIMARY KEY"},
		{"SEARCH t", "t", contracts.AccessUnknown, ""},
		{"SCAN f VIRTUAL TABLE INDEX 0:M1", "f", contracts.AccessUnknown, ""},
		{"SCAN t SOMETHING NEW", "t", contracts.AccessUnknown, ""},
	} {
		rel, kind, index, ok := readDetail(c.line)
		if !ok || rel != c.rel || kind != c.kind || index != c.index {
			t.Errorf("%q: %q %q %q %v, want %q %q %q", c.line, rel, kind, index, ok, c.rel, c.kind, c.index)
		}
	}
}
