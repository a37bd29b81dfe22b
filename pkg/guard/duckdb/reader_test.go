package duckdb

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/pkg/guard/duckdb/duckdbtest"
)

var (
	sharedOnce   sync.Once
	sharedReader *Reader
	sharedErr    error
)

// reader is one parser instance for the whole test binary.
func reader(t testing.TB) *Reader {
	t.Helper()
	sharedOnce.Do(func() { sharedReader, sharedErr = New() })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return sharedReader
}

func TestHostileCorpus(t *testing.T) {
	r := reader(t)
	if n := len(duckdbtest.Hostile); n < 25 {
		t.Fatalf("hostile corpus has %d shapes, want at least 25", n)
	}
	for _, c := range duckdbtest.Hostile {
		st, ref := guard.Check(r, c.SQL, duckdbtest.Policy())
		if ref == nil {
			t.Errorf("%q passed as %+v, want %s", c.SQL, st, c.Code)
			continue
		}
		if string(ref.Code) != c.Code {
			t.Errorf("%q: %s (%s), want %s", c.SQL, ref.Code, ref.Message, c.Code)
		}
		if ref.Message == "" || ref.Fix == "" {
			t.Errorf("%q: refusal without reason or fix: %+v", c.SQL, ref)
		}
	}
}

func TestValidAnalytics(t *testing.T) {
	r := reader(t)
	for _, q := range duckdbtest.Valid {
		st, ref := guard.Check(r, q, duckdbtest.Policy())
		if ref != nil {
			t.Errorf("%q refused: %s: %s", q, ref.Code, ref.Message)
			continue
		}
		if st.Canonical == "" || st.Text == "" || strings.HasSuffix(st.Text, ";") {
			t.Errorf("%q: text %q canonical %q", q, st.Text, st.Canonical)
		}
	}
}

func TestTablesAndCTEScoping(t *testing.T) {
	r := reader(t)
	cases := []struct {
		sql  string
		want []string
	}{
		{"SELECT * FROM orders", []string{"main.orders"}},
		{"SELECT * FROM Sales.Orders o JOIN customers c USING (id)", []string{"main.customers", "sales.orders"}},
		{"WITH orders AS (SELECT 1) SELECT * FROM orders", nil},
		// A CTE body does not see itself unless recursive: this reads the table.
		{"WITH orders AS (SELECT * FROM orders) SELECT * FROM orders", []string{"main.orders"}},
		// A qualified name is never a CTE.
		{"WITH orders AS (SELECT 1) SELECT * FROM main.orders", []string{"main.orders"}},
		// A CTE is visible in the query that declares it, not outside it.
		{"SELECT * FROM (WITH x AS (SELECT 1) SELECT * FROM x) JOIN x USING (a)", []string{"main.x"}},
		{"WITH a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a, b", []string{"main.b"}},
		{"WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 3) SELECT * FROM t", nil},
		{"SELECT * FROM orders WHERE id IN (SELECT order_id FROM items) AND EXISTS (SELECT 1 FROM refunds)",
			[]string{"main.items", "main.orders", "main.refunds"}},
		{"SELECT (SELECT max(x) FROM deep.t3) FROM t1 UNION ALL SELECT 1 FROM t2", []string{"deep.t3", "main.t1", "main.t2"}},
	}
	for _, c := range cases {
		st, ref := r.Read(c.sql)
		if ref != nil {
			t.Errorf("%q refused: %+v", c.sql, ref)
			continue
		}
		got := st.Tables("main")
		if len(got) == 0 {
			got = nil
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q reads %v, want %v", c.sql, got, c.want)
		}
	}
}

func TestBounds(t *testing.T) {
	r := reader(t)
	cases := []struct {
		sql  string
		want []guard.Bound
	}{
		{"SELECT * FROM t WHERE d >= 1", []guard.Bound{{Column: "d"}}},
		{"SELECT * FROM t WHERE d > now() - INTERVAL 1 DAY AND x = 'a'", []guard.Bound{{Column: "d"}, {Column: "x"}}},
		{"SELECT * FROM t e WHERE 3 < e.d", []guard.Bound{{Qualifier: "e", Column: "d"}}},
		{"SELECT * FROM t WHERE d BETWEEN 1 AND 2", []guard.Bound{{Column: "d"}}},
		{"SELECT * FROM t WHERE d IN (1, 2)", []guard.Bound{{Column: "d"}}},
		{"SELECT * FROM t WHERE NOT (d < 3)", []guard.Bound{{Column: "d"}}},
		{"SELECT * FROM t WHERE d >= current_date", []guard.Bound{{Column: "d"}}},
		{"SELECT * FROM t WHERE d <= 1", nil},
		{"SELECT * FROM t WHERE d >= 1 OR x = 1", nil},
		{"SELECT * FROM t WHERE d >= e", nil},
		{"SELECT * FROM t WHERE d >= (SELECT 1)", nil},
		{"SELECT * FROM t WHERE d IN (1, e)", nil},
		{"SELECT * FROM t WHERE year(d) >= 1", nil},
		{"SELECT * FROM t WHERE d >= max(1)", nil},
		{"SELECT * FROM t a JOIN u b ON a.d >= 5 AND a.id = b.id", []guard.Bound{{Qualifier: "a", Column: "d"}}},
	}
	for _, c := range cases {
		st, ref := r.Read(c.sql)
		if ref != nil {
			t.Errorf("%q refused: %+v", c.sql, ref)
			continue
		}
		got := st.Scopes[0].Bounds
		if len(got) == 0 {
			got = nil
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q bounds %v, want %v", c.sql, got, c.want)
		}
	}
}

func TestCanonicalKeepsLiterals(t *testing.T) {
	r := reader(t)
	a, _ := r.Read("select  *  from orders where total > 10 -- x")
	b, _ := r.Read("SELECT * FROM orders WHERE total > 10;")
	c, _ := r.Read("SELECT * FROM orders WHERE total > 11")
	if a == nil || b == nil || c == nil {
		t.Fatal("refused")
	}
	if a.Canonical != b.Canonical {
		t.Errorf("same statement, two forms: %q vs %q", a.Canonical, b.Canonical)
	}
	if a.Canonical == c.Canonical || !strings.Contains(c.Canonical, "11") {
		t.Errorf("literal lost: %q vs %q", a.Canonical, c.Canonical)
	}
	if b.Text != "SELECT * FROM orders WHERE total > 10" {
		t.Errorf("text %q", b.Text)
	}
}

func TestRefusalShapes(t *testing.T) {
	r := reader(t)
	_, ref := r.Read("SELECT * FROM read_csv('x')")
	if ref == nil || !strings.Contains(ref.Fix, "generate_series, range, unnest") {
		t.Errorf("table function refusal should list the allowed ones: %+v", ref)
	}
	_, ref = r.Read("SELECT 1 +")
	if ref == nil || ref.Code != contracts.RefuseUnparsable || !strings.Contains(ref.Message, "character") {
		t.Errorf("unparsable should name where the parser stopped: %+v", ref)
	}
	_, ref = r.Read("PRAGMA version")
	if ref == nil || !strings.Contains(ref.Message, "PRAGMA") {
		t.Errorf("not_a_select should name the statement: %+v", ref)
	}
	_, ref = r.Read(strings.Repeat(" ", 10) + "SELECT '" + strings.Repeat("x", MaxSQLBytes) + "'")
	if ref == nil || ref.Code != contracts.RefuseUnsupported && ref.Code != contracts.RefuseTooComplex {
		t.Errorf("oversized statement: %+v", ref)
	}
}

// The parser instance itself is locked: nothing a caller sends reaches files
// or changes its settings, even through the reader's own connection.
func TestParserInstanceLocked(t *testing.T) {
	r := reader(t)
	// Each is refused by the setting that holds it, not by some other error.
	for _, c := range []struct {
		sql   string
		typ   duckdb.ErrorType
		words string
	}{
		{"SET enable_external_access = true", duckdb.ErrorTypeInvalidInput, "configuration has been locked"},
		{"SET lock_configuration = false", duckdb.ErrorTypeInvalidInput, "configuration has been locked"},
		{"SELECT * FROM read_csv('/etc/passwd')", duckdb.ErrorTypePermission, "disabled by configuration"},
		{"COPY (SELECT 1) TO '/tmp/sonde-parser-instance.csv'", duckdb.ErrorTypePermission, "disabled by configuration"},
		{"INSTALL httpfs", duckdb.ErrorTypePermission, "disabled by configuration"},
	} {
		_, err := r.db.Exec(c.sql)
		var de *duckdb.Error
		if !errors.As(err, &de) || de.Type != c.typ || !strings.Contains(de.Msg, c.words) {
			t.Errorf("%q on the parser instance: %v, want DuckDB error type %d saying %q", c.sql, err, c.typ, c.words)
		}
	}
}

func TestSplitStatements(t *testing.T) {
	cases := map[string]int{
		"SELECT 1":                              1,
		"SELECT 1; SELECT 2":                    2,
		"SELECT ';'; -- ; \n SELECT 2 /* ; */;": 2,
		`SELECT "a;b"`:                          1,
		"SELECT $x$;$x$":                        1,
		"SELECT 'it''s;'":                       1,
		";;  -- x\n;":                           0,
	}
	for in, want := range cases {
		if got := len(splitStatements(in)); got != want {
			t.Errorf("%q: %d statements, want %d", in, got, want)
		}
	}
}

// TestSystemUnderMainStar: under main.*, DuckDB's own views and catalogs —
// which its search path reaches without qualification — are refused, and a
// pattern that names one admits it.
func TestSystemUnderMainStar(t *testing.T) {
	r := reader(t)
	p := duckdbtest.MainStarPolicy()
	for _, q := range duckdbtest.SystemUnderMainStar {
		_, ref := guard.Check(r, q, p)
		if ref == nil || ref.Code != contracts.RefuseTableNotReadable {
			t.Errorf("%q under main.*: %+v, want table_not_readable", q, ref)
		}
	}
	for _, q := range []string{"SELECT * FROM orders", "SELECT * FROM Main.Orders", "SELECT * FROM secrets", "SELECT * FROM shop.main.secrets"} {
		if _, ref := guard.Check(r, q, p); ref != nil {
			t.Errorf("%q under main.*: %+v", q, ref)
		}
	}
	named := duckdbtest.MainStarPolicy()
	named.Readable = append(named.Readable, "main.duckdb_columns", "pg_catalog.pg_settings", "information_schema.*")
	for _, q := range []string{"SELECT * FROM duckdb_columns", "SELECT * FROM DuckDB_Columns", "SELECT * FROM pg_settings",
		"SELECT * FROM pg_catalog.pg_settings", "SELECT * FROM information_schema.tables"} {
		if _, ref := guard.Check(r, q, named); ref != nil {
			t.Errorf("%q with the view named: %+v", q, ref)
		}
	}
	for _, q := range []string{"SELECT * FROM duckdb_tables", "SELECT * FROM pg_class"} {
		if _, ref := guard.Check(r, q, named); ref == nil {
			t.Errorf("%q passed though no pattern names it", q)
		}
	}
}

// TestSystemViewsCoverDuckDB holds the embedded lists to the DuckDB this
// project builds with: every internal view is listed under the schema it
// lives in, and no table function is reachable as a bare name (which the
// reader would take for a table).
func TestSystemViewsCoverDuckDB(t *testing.T) {
	r := reader(t)
	rows, err := r.db.Query("SELECT database_name, schema_name, view_name FROM duckdb_views() WHERE internal")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var db, schema, view string
		if err := rows.Scan(&db, &schema, &view); err != nil {
			t.Fatal(err)
		}
		n++
		tbl := guard.Table{Name: view}
		resolveSystem(&tbl)
		switch {
		case db != "system":
			t.Errorf("internal view %s.%s.%s outside the system catalog", db, schema, view)
		case schema == "main" && !SystemMainViews[view], schema == "pg_catalog" && !SystemPgCatalogViews[view]:
			t.Errorf("internal view %s.%s is not in the embedded list", schema, view)
		case schema != "main" && schema != "pg_catalog" && !SystemSchemas[schema]:
			t.Errorf("internal view %s.%s lives in a schema the reader does not know", schema, view)
		case (schema == "main" || schema == "pg_catalog") && (!tbl.System || tbl.Schema != schema):
			t.Errorf("bare %s resolves to %+v, want system %s", view, tbl, schema)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 40 {
		t.Errorf("only %d internal views: the query no longer finds them", n)
	}
	// Every view in the lists still exists.
	for _, m := range []map[string]bool{SystemMainViews, SystemPgCatalogViews} {
		for v := range m {
			if _, err := r.db.Exec("DESCRIBE " + v); err != nil {
				t.Errorf("listed view %s: %v", v, err)
			}
		}
	}
	// Table functions that take no argument: none binds as a bare name.
	fns, err := r.db.Query("SELECT DISTINCT function_name FROM duckdb_functions() WHERE function_type = 'table' AND len(parameters) = 0")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for fns.Next() {
		var f string
		if err := fns.Scan(&f); err != nil {
			t.Fatal(err)
		}
		names = append(names, f)
	}
	fns.Close()
	if len(names) < 10 {
		t.Fatalf("only %d table functions without arguments", len(names))
	}
	for _, f := range names {
		if SystemMainViews[f] || SystemPgCatalogViews[f] {
			continue
		}
		// Prepare binds without running.
		st, err := r.db.Prepare(`SELECT * FROM "` + strings.ReplaceAll(f, `"`, `""`) + `"`)
		if err == nil {
			st.Close()
			t.Errorf("table function %s binds as a bare name; list it as a system view", f)
		}
	}
}

// TestOuterJoinLimits: a bound in an outer join's ON limits only the side
// the join does not preserve.
func TestOuterJoinLimits(t *testing.T) {
	r := reader(t)
	cases := []struct {
		sql    string
		limits []string
	}{
		{"SELECT * FROM a x LEFT JOIN b y ON y.d >= 1", []string{"y"}},
		{"SELECT * FROM a x LEFT OUTER JOIN b ON b.d >= 1", []string{"b"}},
		{"SELECT * FROM a x RIGHT JOIN b y ON x.d >= 1", []string{"x"}},
		{"SELECT * FROM a x JOIN c ON true RIGHT JOIN b y ON x.d >= 1", []string{"x", "c"}},
		{"SELECT * FROM a x FULL JOIN b y ON x.d >= 1", []string{}},
		{"SELECT * FROM a x ANTI JOIN b y ON x.d >= 1", []string{"y"}},
		{"SELECT * FROM a x SEMI JOIN b y ON x.d >= 1", nil},
		{"SELECT * FROM a x JOIN b y ON x.d >= 1", nil},
		{"SELECT * FROM a x, b y WHERE x.d >= 1", nil},
		{"SELECT * FROM a x LEFT JOIN (b y JOIN c z ON z.e = y.e) ON y.d >= 1", []string{"y", "z"}},
		{"SELECT * FROM a x LEFT JOIN (SELECT * FROM b) y ON y.d >= 1", []string{}},
	}
	for _, c := range cases {
		st, ref := r.Read(c.sql)
		if ref != nil {
			t.Errorf("%q refused: %+v", c.sql, ref)
			continue
		}
		var got []guard.Bound
		for _, b := range st.Scopes[0].Bounds {
			if b.Column == "d" {
				got = append(got, b)
			}
		}
		if len(got) != 1 {
			t.Errorf("%q: bounds %+v", c.sql, st.Scopes[0].Bounds)
			continue
		}
		if !reflect.DeepEqual(got[0].Limits, c.limits) {
			t.Errorf("%q: limits %#v, want %#v", c.sql, got[0].Limits, c.limits)
		}
	}
}
