package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	msqlite "modernc.org/sqlite"
)

// cteSchema is a database with a table that may not be read (secret), one
// that may (genre), and views over both; no table is named c, d, e or r.
var cteSchema = []string{
	"CREATE TABLE secret (token TEXT)",
	"INSERT INTO secret VALUES ('s1')",
	"CREATE TABLE \"Genre\" (id INTEGER PRIMARY KEY, name TEXT)",
	"CREATE VIEW v_count AS SELECT count(*) n FROM secret",
	"CREATE VIEW v_any AS SELECT 1 one FROM secret",
	"CREATE VIEW v_genre AS SELECT count(*) n FROM genre",
	"CREATE VIEW v_cte AS WITH k AS (SELECT 1 UNION ALL SELECT 2) SELECT count(*) n FROM k",
	"CREATE VIEW v_shadow AS WITH secret AS (SELECT 1) SELECT count(*) n FROM secret",
}

// ctePolicy is the issue's: mixed case, no schema.
var ctePolicy = guard.Policy{Readable: []string{"Genre", "Track", "Invoice", "V_Count", "v_any", "v_genre", "v_cte", "v_shadow"}, DefaultSchema: "main"}

func cteReader(t *testing.T) Reader {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cte.db")
	w, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range cteSchema {
		if _, err := w.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	w.Close()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	r := reader(t, db)
	r.Policy = ctePolicy
	return r
}

// cteReadsPass are statements that read a CTE with none of its columns
// used, which SQLite reports as a READ of the CTE's name with no column and
// no database, as it reports count(*) of an unqualified table.
var cteReadsPass = []string{
	"WITH c AS (SELECT 1 x) SELECT count(*) FROM c",
	"with C as (select 1 x) select count(*) from c",
	"WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM r WHERE x<5) SELECT count(*) FROM r",
	"WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM r WHERE x<5) SELECT group_concat(hex(zeroblob(5))) FROM r",
	"WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT 1 FROM r LIMIT 5) SELECT count(*) FROM r",
	"WITH d AS (WITH e AS (SELECT 1) SELECT 1 FROM e) SELECT count(*) FROM d",
	"WITH d AS (SELECT 1 x), e AS (SELECT count(*) n FROM d) SELECT n FROM e",
	"WITH d AS MATERIALIZED (SELECT 1 x) SELECT 1 FROM d",
	"SELECT (WITH c AS (SELECT 1) SELECT count(*) FROM c)",
	"SELECT count(*) FROM genre, (WITH c AS (SELECT 1) SELECT 1 FROM c)",
	"WITH c AS (SELECT 1) SELECT count(*) FROM c, genre",
	"WITH c AS (SELECT id FROM genre) SELECT count(*) FROM c",
	"WITH \"Q\"\"x\" AS (SELECT 1) SELECT count(*) FROM \"q\"\"x\"",
	// A CTE named like a readable table: the read is held to the patterns,
	// which admit it.
	"WITH genre AS (SELECT 1) SELECT count(*) FROM genre",
	"WITH d AS (SELECT 1) SELECT n FROM v_genre, d",
	// A view's own CTE, read without a column.
	"SELECT n FROM v_cte",
	"WITH k AS (SELECT 1) SELECT count(*) FROM v_cte, k",
}

// cteReadsRefused read a table that may not be read without using a column
// of it, beside a CTE of the same name defined elsewhere in the statement,
// or through a view: SQLite's report of the table read is what it would be
// for the CTE, and the table is still held to the patterns.
var cteReadsRefused = []string{
	"SELECT 1 FROM secret, (WITH secret AS (SELECT 1) SELECT 1 FROM secret)",
	"SELECT 1 FROM secret, (WITH secret AS (SELECT 1 x) SELECT x FROM secret)",
	"SELECT (WITH secret AS (SELECT 1) SELECT count(*) FROM secret) FROM secret",
	"WITH d AS (SELECT 1) SELECT count(*) FROM secret, d",
	"WITH secret AS (SELECT 1) SELECT count(*) FROM main.secret",
	"WITH secret AS (SELECT 1) SELECT count(*) FROM MAIN.\"SECRET\"",
	"WITH d AS (SELECT count(*) FROM secret) SELECT 1 FROM d",
	"WITH d AS MATERIALIZED (SELECT 1 FROM secret) SELECT count(*) FROM d",
	"WITH RECURSIVE r(x) AS (SELECT 1 FROM secret UNION ALL SELECT x+1 FROM r WHERE x<5) SELECT count(*) FROM r",
	"SELECT count(*) FROM (SELECT 1 FROM secret) AS c",
	// Views read their tables as main's: still checked, whatever CTE is named.
	"SELECT n FROM v_count",
	"WITH secret AS (SELECT 1) SELECT n FROM v_count",
	"WITH secret AS (SELECT 1) SELECT count(*) FROM v_any",
	// The CTE hides the table here, but SQLite's report of a read without a
	// column cannot tell the two apart, so the name is the table's.
	"WITH secret AS (SELECT 1) SELECT count(*) FROM secret",
	"SELECT n FROM v_shadow",
	// SQLite's own tables under a CTE's name.
	"WITH sqlite_master AS (SELECT 1) SELECT count(*) FROM sqlite_master",
	"SELECT count(*) FROM sqlite_master, (WITH sqlite_master AS (SELECT 1) SELECT 1 FROM sqlite_master)",
}

// TestCTEReadWithoutColumns: a CTE read with none of its columns used
// passes at the top, nested and recursive; a table of the same name as a
// CTE defined elsewhere in the statement, and a table read through a view,
// are still held to the patterns.
func TestCTEReadWithoutColumns(t *testing.T) {
	r := cteReader(t)
	for _, q := range cteReadsPass {
		st, ref := guard.Check(r, q, ctePolicy)
		if ref != nil {
			t.Errorf("%q refused: %s: %s", q, ref.Code, ref.Message)
			continue
		}
		for _, tb := range st.Tables("main") {
			if tb != "main.genre" && tb != "main.v_genre" && tb != "main.v_cte" {
				t.Errorf("%q: reads %s", q, tb)
			}
		}
	}
	for _, q := range cteReadsRefused {
		_, ref := guard.Check(r, q, ctePolicy)
		// Refused for the table itself, not by the second look for a table
		// that appeared meanwhile.
		if ref == nil || ref.Code != contracts.RefuseTableNotReadable || strings.Contains(ref.Message, "appeared") {
			t.Errorf("%q: %+v, want %s", q, ref, contracts.RefuseTableNotReadable)
		}
	}
}

// TestCTEAuthorizerAtRunTime: the statement runs under the authorizer it
// was read with, and a read of secret counted without a column is denied
// while it runs even where a CTE of that name is among the names allowed.
func TestCTEAuthorizerAtRunTime(t *testing.T) {
	r := cteReader(t)
	rd, err := r.Inspect("WITH c AS (SELECT 1 x), secret AS (SELECT 2) SELECT count(*) FROM c")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rd.CTEs, ","); got != "c" {
		t.Errorf("CTEs %q, want c (secret is a table)", got)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "run.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE secret (token TEXT); INSERT INTO secret VALUES ('s')"); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	run := func(q string, ctes []string) (*Record, error) {
		rec := &Record{}
		if err := conn.Raw(func(dc any) error {
			return dc.(msqlite.AuthorizerRegisterer).RegisterAuthorizer(StatementAuthorizer(ctePolicy, rec, ctes))
		}); err != nil {
			t.Fatal(err)
		}
		var n int
		return rec, conn.QueryRowContext(context.Background(), q).Scan(&n)
	}
	if rec, err := run("WITH c AS (SELECT 1 x) SELECT count(*) FROM c", []string{"C"}); err != nil {
		t.Errorf("CTE read: %v", err)
	} else if got := strings.Join(rec.CTEReads(), ","); got != "c" {
		t.Errorf("CTE reads %q", got)
	}
	// Were the names given wrong (a table's), a qualified read is still the
	// table's, and nothing else is allowed because of them.
	if _, err := run("SELECT count(*) FROM main.secret", []string{"secret"}); err == nil {
		t.Error("main.secret read under a CTE name")
	}
	if _, err := run("SELECT count(*) FROM secret", nil); err == nil {
		t.Error("secret read with no CTE names")
	}
	if _, err := run("SELECT count(token) FROM secret", []string{"secret"}); err == nil {
		t.Error("a column of secret read under a CTE name")
	}
}

// TestCTETableAppearing: a table dropped while its name was looked up and
// created again before SQLite compiled the statement once more would be
// read as a CTE; the second look after the compile finds it, and the
// statement is refused.
func TestCTETableAppearing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "appear.db")
	w, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	exec := func(s string) {
		t.Helper()
		if _, err := w.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	exec("CREATE TABLE \"Genre\" (id INTEGER)")
	exec("CREATE TABLE c (a TEXT)")
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	inner := reader(t, db)
	swapped := false
	r := Reader{Policy: ctePolicy, Compiler: CompilerFunc(func(s string, auth msqlite.AuthorizerFn) ([]string, error) {
		if s != `SELECT 1 FROM "c"` || swapped {
			return inner.Compiler.Compile(s, auth)
		}
		swapped = true
		exec("DROP TABLE c")
		defer exec("CREATE TABLE c (a TEXT)")
		// A name SQLite cannot find makes the connection load the changed
		// schema, as any later statement of it would.
		if _, err := inner.Compiler.Compile("SELECT 1 FROM nowhere", auth); err == nil {
			t.Fatal("nowhere compiled")
		}
		return inner.Compiler.Compile(s, auth)
	})}
	const q = "SELECT 1 FROM c, (WITH c AS (SELECT 1) SELECT 1 FROM c)"
	_, ref := r.Read(q)
	if !swapped {
		t.Fatal("c was never looked up")
	}
	if ref == nil || ref.Code != contracts.RefuseTableNotReadable || !strings.Contains(ref.Message, "appeared") {
		t.Fatalf("refusal %+v, want table_not_readable for a table that appeared", ref)
	}
	// Left alone, the table is found by the first look.
	_, ref = r.Read(q)
	if ref == nil || ref.Code != contracts.RefuseTableNotReadable || strings.Contains(ref.Message, "appeared") {
		t.Fatalf("refusal %+v, want main.c not readable", ref)
	}
}
