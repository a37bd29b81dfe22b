package postgres_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/pkg/guard/postgres"
	"github.com/sondehq/sonde/pkg/guard/postgres/postgrestest"
)

func TestHostileCorpus(t *testing.T) {
	if n := len(postgrestest.Hostile); n < 40 {
		t.Fatalf("the hostile corpus has %d shapes, want at least 40", n)
	}
	seen := map[string]bool{}
	for _, c := range postgrestest.Hostile {
		seen[string(c.Code)] = true
		t.Run(c.Name, func(t *testing.T) {
			st, ref := guard.Check(postgres.Reader{}, c.SQL, postgrestest.Policy())
			if ref == nil {
				t.Fatalf("passed %q as %+v; want refusal %s", c.SQL, st, c.Code)
			}
			if ref.Code != c.Code {
				t.Fatalf("%q refused %s (%s); want %s", c.SQL, ref.Code, ref.Message, c.Code)
			}
			if ref.Message == "" || ref.Fix == "" {
				t.Fatalf("refusal %+v lacks a reason or a fix", ref)
			}
		})
	}
	for _, code := range contracts.GuardRefusalCodes {
		if code == contracts.RefuseEngineParse {
			continue // PostgreSQL's own parser is the guard's parser.
		}
		if !seen[string(code)] {
			t.Errorf("no hostile shape is refused %s", code)
		}
	}
}

func TestValidAnalytics(t *testing.T) {
	for _, q := range postgrestest.Valid {
		st, ref := guard.Check(postgres.Reader{}, q, postgrestest.Policy())
		if ref != nil {
			t.Errorf("refused %s (%s, fix: %s):\n%s", ref.Code, ref.Message, ref.Fix, q)
			continue
		}
		if st.Canonical == "" || st.Text == "" {
			t.Errorf("no text or canonical form for %q: %+v", q, st)
		}
	}
}

func read(t *testing.T, q string) *guard.Statement {
	t.Helper()
	st, ref := postgres.Reader{}.Read(q)
	if ref != nil {
		t.Fatalf("Read(%q) refused %s: %s", q, ref.Code, ref.Message)
	}
	return st
}

func TestTablesAndCTEScoping(t *testing.T) {
	cases := []struct {
		sql  string
		want []string
	}{
		{"SELECT * FROM orders", []string{"public.orders"}},
		{"SELECT * FROM Sales.Orders o JOIN \"Mixed\" m ON true", []string{"public.Mixed", "sales.orders"}},
		// A CTE shadows the table of its name inside its WITH …
		{"WITH orders AS (SELECT 1) SELECT * FROM orders", nil},
		// … but not a schema-qualified name …
		{"WITH orders AS (SELECT 1) SELECT * FROM public.orders", []string{"public.orders"}},
		// … and not outside its WITH.
		{"SELECT * FROM (WITH k AS (SELECT 1) SELECT * FROM k) s JOIN k ON true", []string{"public.k"}},
		// A plain CTE sees earlier siblings only; a recursive one sees all.
		{"WITH a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a", []string{"public.b"}},
		{"WITH RECURSIVE a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a", nil},
		{"WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 3) SELECT * FROM t", nil},
		// A CTE body reads tables; an outer CTE is visible in nested WITHs and subqueries.
		{"WITH x AS (SELECT * FROM events) SELECT * FROM (WITH y AS (SELECT * FROM x) SELECT * FROM y WHERE EXISTS (SELECT 1 FROM x)) s", []string{"public.events"}},
		// Every place a table is read.
		{"SELECT (SELECT max(id) FROM a), b.x FROM b WHERE b.id IN (SELECT id FROM c) AND EXISTS (SELECT 1 FROM d) UNION SELECT 1, 2 FROM e TABLESAMPLE SYSTEM (10)",
			[]string{"public.a", "public.b", "public.c", "public.d", "public.e"}},
		{"SELECT * FROM pg_class", []string{"pg_catalog.pg_class"}},
	}
	for _, c := range cases {
		got := read(t, c.sql).Tables(postgres.DefaultSchema)
		if len(got) == 0 {
			got = nil
		}
		if !reflect.DeepEqual(got, c.want) {
			// Policy matching is case-insensitive; Tables lowers names.
			want := make([]string, len(c.want))
			for i, w := range c.want {
				want[i] = strings.ToLower(w)
			}
			if len(want) == 0 {
				want = nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s\n tables %v, want %v", c.sql, got, c.want)
			}
		}
	}
}

func TestCatalogKept(t *testing.T) {
	st := read(t, "SELECT * FROM shop.public.orders")
	tb := st.Scopes[0].Tables[0]
	if tb.Catalog != "shop" || tb.Schema != "public" || tb.Name != "orders" {
		t.Fatalf("table %+v, want catalog shop", tb)
	}
	p := guard.Policy{DefaultSchema: "public", Catalog: "shop"}
	if ref := guard.Apply(st, p); ref != nil {
		t.Fatalf("own catalog refused: %+v", ref)
	}
	p.Catalog = "other"
	if ref := guard.Apply(st, p); ref == nil || ref.Code != contracts.RefuseTableNotReadable {
		t.Fatalf("another catalog: %+v, want table_not_readable", ref)
	}
}

func TestBounds(t *testing.T) {
	cases := []struct {
		where string
		want  []guard.Bound
	}{
		{"d >= '2024-01-01'", []guard.Bound{{Column: "d"}}},
		{"e.d > now() - interval '1 day'", []guard.Bound{{Qualifier: "e", Column: "d"}}},
		{"d = current_date", []guard.Bound{{Column: "d"}}},
		{"'2024-01-01' <= d", []guard.Bound{{Column: "d"}}},
		{"current_date - 7 < d", []guard.Bound{{Column: "d"}}},
		{"d BETWEEN '2024-01-01'::date AND current_date", []guard.Bound{{Column: "d"}}},
		{"d IN ('2024-01-01', '2024-01-02')", []guard.Bound{{Column: "d"}}},
		{"NOT (d < '2024-01-01')", []guard.Bound{{Column: "d"}}},
		{"NOT ('2024-01-01' > d)", []guard.Bound{{Column: "d"}}},
		{"s.e.d >= 1", []guard.Bound{{Qualifier: "e", Column: "d"}}},
		{"a = 1 AND (b >= 2 AND c > 3)", []guard.Bound{{Column: "a"}, {Column: "b"}, {Column: "c"}}},
		// Not bounds.
		{"d < '2024-01-01'", nil},
		{"d >= '2024-01-01' OR x = 1", nil},
		{"d::date >= '2024-01-01'", nil},
		{"d >= other", nil},
		{"d >= (SELECT 1)", nil},
		{"d NOT IN (1, 2)", nil},
		{"d NOT BETWEEN 1 AND 2", nil},
		{"d IN (1, x)", nil},
		{"d >= max(1) OVER ()", nil},
		{"NOT (d >= 1)", nil},
	}
	for _, c := range cases {
		st := read(t, "SELECT 1 FROM t WHERE "+c.where)
		got := st.Scopes[0].Bounds
		if len(got) == 0 {
			got = nil
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("WHERE %s: bounds %+v, want %+v", c.where, got, c.want)
		}
	}
	// A join's own ON counts, in the scope that reads the table.
	st := read(t, "SELECT 1 FROM a JOIN b ON b.d >= 1 AND b.id = a.id")
	if got := st.Scopes[0].Bounds; len(got) != 1 || !reflect.DeepEqual(got[0], guard.Bound{Qualifier: "b", Column: "d"}) {
		t.Errorf("join bounds %+v", got)
	}
}

func TestTextAndCanonical(t *testing.T) {
	cases := []struct{ in, text string }{
		{"SELECT 1;", "SELECT 1"},
		{"SELECT 1 ;; \n", "SELECT 1"},
		{"SELECT 1; -- trailing comment", "SELECT 1"},
		{"-- leading comment\nSELECT 1", "-- leading comment\nSELECT 1"},
		{"SELECT ';' ;", "SELECT ';'"},
	}
	for _, c := range cases {
		if got := read(t, c.in).Text; got != c.text {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.text)
		}
	}
	a := read(t, "select  a, b from T where x = 1")
	b := read(t, "SELECT a,b FROM t WHERE x=1;")
	c := read(t, "SELECT a, b FROM t WHERE x = 2")
	if a.Canonical != b.Canonical {
		t.Errorf("canonical forms differ: %q vs %q", a.Canonical, b.Canonical)
	}
	if a.Canonical == c.Canonical {
		t.Errorf("canonical form dropped a literal: %q", a.Canonical)
	}
}

// TestPassingParsesAsOneSelect holds every valid statement's Text to the
// property the fuzz target checks: one SelectStmt, nothing that writes.
func TestPassingParsesAsOneSelect(t *testing.T) {
	for _, q := range postgrestest.Valid {
		st := read(t, q)
		assertOneSelect(t, st.Text)
		assertOneSelect(t, st.Canonical)
	}
}

func assertOneSelect(t testing.TB, q string) {
	t.Helper()
	tree, err := pg_query.Parse(q)
	if err != nil {
		t.Fatalf("passed text does not parse: %v\n%q", err, q)
	}
	if len(tree.Stmts) != 1 || tree.Stmts[0].GetStmt().GetSelectStmt() == nil {
		t.Fatalf("passed text is not one SELECT: %q", q)
	}
	js, err := pg_query.ParseToJSON(q)
	if err != nil {
		t.Fatalf("ParseToJSON: %v", err)
	}
	for _, bad := range []string{`"InsertStmt"`, `"UpdateStmt"`, `"DeleteStmt"`, `"MergeStmt"`, `"intoClause"`, `"lockingClause"`} {
		if strings.Contains(js, bad) {
			t.Fatalf("passed text holds %s: %q", bad, q)
		}
	}
}

func TestFunctionAllowed(t *testing.T) {
	for _, f := range []string{"count", "percentile_cont", "date_trunc", "jsonb_extract_path_text", "generate_series"} {
		if !postgres.FunctionAllowed(f) {
			t.Errorf("%s not allowed", f)
		}
	}
	for _, f := range []string{"pg_sleep", "dblink", "set_config", "nextval", "lo_import", "query_to_xml", "current_setting", "pg_advisory_lock", "txid_current", "version"} {
		if postgres.FunctionAllowed(f) {
			t.Errorf("%s allowed", f)
		}
	}
}

// TestNoRefusalNamesMissingTools holds every refusal's words to the tools
// the model has (inspect_schema, run_read_query, compose_report).
func TestNoRefusalNamesMissingTools(t *testing.T) {
	for _, c := range postgrestest.Hostile {
		_, ref := guard.Check(postgres.Reader{}, c.SQL, postgrestest.Policy())
		if ref == nil {
			continue
		}
		for _, gone := range []string{"describe_table", "list_connections", "list_tables"} {
			if strings.Contains(ref.Message+ref.Fix, gone) {
				t.Errorf("%s: refusal names %s, a tool the model does not have: %+v", c.Name, gone, ref)
			}
		}
	}
}

func TestAttributeNotation(t *testing.T) {
	// Each of issue 7's statements, refused as the call it is.
	for _, q := range []string{
		"SELECT (NULL::int).pg_stat_get_activity",
		"SELECT ('employee').pg_relation_filepath",
		"SELECT (oid).pg_get_functiondef FROM customers",
		"SELECT ('some_index').brin_summarize_new_values",
		"SELECT t.brin_summarize_new_values FROM customers t",
	} {
		_, ref := postgres.Reader{}.Read(q)
		if ref == nil || ref.Code != contracts.RefuseFunctionDenied {
			t.Errorf("%s: %+v, want function_denied", q, ref)
		}
	}
	// Columns whose names are harmless built-ins read as columns.
	for _, q := range []string{"SELECT c.name, c.path, c.host, c.width, c.oid FROM t c", "SELECT (c).name FROM t c", "SELECT s.count FROM (SELECT count(*) FROM t) s"} {
		read(t, q)
	}
	if !postgres.AttributeAllowed("name") || postgres.AttributeAllowed("pg_stat_get_activity") || postgres.AttributeAllowed("nextval") {
		t.Error("AttributeAllowed disagrees with the allowlist")
	}
}

func TestUses(t *testing.T) {
	_, u, ref := postgres.Reader{}.ReadUses(`SELECT lower(c.name), c.x, s.y, (c.id).z, public.customers.w, o.id + 1,
	        (SELECT count(*) FROM orders o2 WHERE o2.customer_id = c.id AND c.v BETWEEN 1 AND 2)
	   FROM customers c JOIN public.customers ON true, (SELECT 1 AS y) s, orders o
	  ORDER BY 1 USING <`)
	if ref != nil {
		t.Fatal(ref)
	}
	has := func(list []string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !slices.Contains(list, w) {
				t.Errorf("%v lacks %s", list, w)
			}
		}
	}
	has(u.Functions, "lower", "count")
	has(u.Operators, "+", "=", ">=", "<=", "<")
	for _, want := range []postgres.Attribute{
		{Name: "name", Schema: "public", Table: "customers"},
		{Name: "x", Schema: "public", Table: "customers"},
		{Name: "y"}, // a subquery's column: no table
		{Name: "z"}, // a field of an expression
		{Name: "id", Schema: "public", Table: "customers"},
		{Name: "w", Schema: "public", Table: "customers"},
		{Name: "customer_id", Schema: "public", Table: "orders"},
		{Name: "v", Schema: "public", Table: "customers"}, // from the enclosing SELECT
	} {
		if !slices.Contains(u.Attributes, want) {
			t.Errorf("attributes %+v lack %+v", u.Attributes, want)
		}
	}
}

func TestNamesExactAndSystemTables(t *testing.T) {
	cases := []struct {
		sql          string
		schema, name string
		system       bool
	}{
		{`SELECT * FROM "GENRE"`, "public", "GENRE", false},
		{`SELECT * FROM Genre`, "public", "genre", false},
		{`SELECT * FROM pg_settings`, "pg_catalog", "pg_settings", true},
		{`SELECT * FROM pg_stat_activity`, "pg_catalog", "pg_stat_activity", true},
		{`SELECT * FROM information_schema.tables`, "information_schema", "tables", true},
		{`SELECT * FROM PG_CATALOG.PG_CLASS`, "pg_catalog", "pg_class", true},
		{`SELECT * FROM pg_toast.pg_toast_2619`, "pg_toast", "pg_toast_2619", true},
		{`SELECT * FROM public.pg_settings`, "public", "pg_settings", false},
	}
	for _, c := range cases {
		st := read(t, c.sql)
		if st.Names != guard.NamesExact {
			t.Errorf("%s: Names %v, want NamesExact", c.sql, st.Names)
		}
		tb := st.Scopes[0].Tables[0]
		if tb.Schema != c.schema || tb.Name != c.name || tb.System != c.system {
			t.Errorf("%s: table %+v, want %s.%s system=%v", c.sql, tb, c.schema, c.name, c.system)
		}
	}
	genre := guard.Policy{Readable: []string{"public.genre"}, DefaultSchema: "public"}
	if _, ref := guard.Check(postgres.Reader{}, `SELECT * FROM "GENRE"`, genre); ref == nil || ref.Code != contracts.RefuseTableNotReadable {
		t.Errorf(`readable [public.genre] let "GENRE" through: %+v`, ref)
	}
	if _, ref := guard.Check(postgres.Reader{}, `SELECT * FROM genre`, genre); ref != nil {
		t.Errorf("readable [public.genre] refused genre: %+v", ref)
	}
	all := guard.Policy{Readable: []string{"public.*"}, DefaultSchema: "public"}
	for _, q := range []string{`SELECT * FROM pg_settings`, `SELECT * FROM pg_stat_activity`, `SELECT * FROM "Public".salaries`,
		`SELECT * FROM "public.x".y`, `SELECT * FROM information_schema.tables`} {
		if _, ref := guard.Check(postgres.Reader{}, q, all); ref == nil || ref.Code != contracts.RefuseTableNotReadable {
			t.Errorf("readable [public.*] let %s through: %+v", q, ref)
		}
	}
	for _, n := range []string{"pg_class", "pg_settings", "pg_stat_activity", "pg_roles"} {
		if !slices.Contains(postgres.CatalogRelations(), n) {
			t.Errorf("CatalogRelations lacks %s", n)
		}
	}
}

func TestJoinLimits(t *testing.T) {
	cases := []struct {
		sql    string
		limits []string
	}{
		{"SELECT 1 FROM a LEFT JOIN b ON b.d >= 1", []string{"b"}},
		{"SELECT 1 FROM a x LEFT JOIN (b JOIN c y ON true) ON x.d >= 1", []string{"b", "y"}},
		{"SELECT 1 FROM a RIGHT JOIN b bb ON a.d >= 1", []string{"a"}},
		{"SELECT 1 FROM a FULL JOIN b ON a.d >= 1", []string{}},
		{"SELECT 1 FROM a JOIN b ON a.d >= 1", nil},
		{"SELECT 1 FROM a LEFT JOIN b ON true WHERE a.d >= 1", nil},
	}
	for _, c := range cases {
		bs := read(t, c.sql).Scopes[0].Bounds
		if len(bs) != 1 {
			t.Fatalf("%s: bounds %+v", c.sql, bs)
		}
		if !reflect.DeepEqual(bs[0].Limits, c.limits) || (bs[0].Limits == nil) != (c.limits == nil) {
			t.Errorf("%s: limits %#v, want %#v", c.sql, bs[0].Limits, c.limits)
		}
	}
}

func TestQuestionMarkPlaceholder(t *testing.T) {
	_, ref := postgres.Reader{}.Read("SELECT * FROM orders WHERE id = ? AND customer_id = ?")
	if ref == nil || ref.Code != contracts.RefuseUnparsable || !strings.Contains(ref.Fix, "$1") {
		t.Fatalf("? placeholder: %+v, want unparsable with a fix naming $1", ref)
	}
	// A ? inside a string, a quoted name or a comment is not a placeholder.
	_, ref = postgres.Reader{}.Read("SELEC '?', \"?\" -- ?")
	if ref == nil || strings.Contains(ref.Fix, "$1") {
		t.Fatalf("misspelt statement with quoted ?: %+v, want a fix that does not mention placeholders", ref)
	}
	// The jsonb operator ? is not a placeholder.
	read(t, `SELECT '{"a": 1}'::jsonb ? 'a'`)
}

// TestGrammarNewerThanTheServer holds the SQL/JSON spellings to the
// server's version (issue 17, item 1): below the version whose grammar has
// them, and when the version is unknown, the server reads them as calls of
// functions of those names, so they are refused and the reason says so; from
// that version they are read as the guard reads them.
func TestGrammarNewerThanTheServer(t *testing.T) {
	if len(postgrestest.GrammarSince) < 12 {
		t.Fatalf("only %d version-gated shapes", len(postgrestest.GrammarSince))
	}
	for _, c := range postgrestest.Hostile {
		since, gated := postgrestest.GrammarSince[c.Name]
		if !gated {
			continue
		}
		for _, v := range []int{0, 150018, since - 1} {
			_, ref := guard.Check(postgres.Reader{ServerVersion: v}, c.SQL, postgrestest.Policy())
			if ref == nil || ref.Code != contracts.RefuseFunctionDenied {
				t.Errorf("%s on server %d: %+v, want function_denied", c.Name, v, ref)
				continue
			}
			if !strings.Contains(ref.Message, "SQL/JSON syntax only from PostgreSQL") || ref.Fix == "" {
				t.Errorf("%s on server %d: reason %q", c.Name, v, ref.Message)
			}
			if v == 150018 && !strings.Contains(ref.Message, "PostgreSQL 15.18") {
				t.Errorf("%s: reason %q does not name the server's version", c.Name, ref.Message)
			}
		}
		if st, ref := guard.Check(postgres.Reader{ServerVersion: since}, c.SQL, postgrestest.Policy()); ref != nil {
			t.Errorf("%s on server %d: refused %s (%s)", c.Name, since, ref.Code, ref.Message)
		} else {
			assertOneSelect(t, st.Canonical)
		}
	}
	// The reason names the function an older server would call.
	_, ref := postgres.Reader{ServerVersion: 150018}.Read(`SELECT json_value('{}', '$.a')`)
	if ref == nil || !strings.Contains(ref.Message, "a function named json_value") {
		t.Errorf("json_value: %+v", ref)
	}
	// What the admitted constructs hold is walked like any expression.
	for _, c := range []struct{ sql, code string }{
		{`SELECT JSON_OBJECTAGG(k VALUE id) FROM secret.keys`, string(contracts.RefuseTableNotReadable)},
		{`SELECT JSON_ARRAY(SELECT k FROM secret.keys)`, string(contracts.RefuseTableNotReadable)},
		{`SELECT JSON_VALUE('1', '$' RETURNING public.evil_domain)`, string(contracts.RefuseFunctionDenied)},
		{`SELECT JSON_QUERY('{}', '$' DEFAULT pg_sleep(1)::text::jsonb ON EMPTY)`, string(contracts.RefuseFunctionDenied)},
		{`SELECT JSON_EXISTS('{}', '$ ? (@ == $x)' PASSING pg_sleep(1) AS x)`, string(contracts.RefuseFunctionDenied)},
		{`SELECT JSON_SCALAR(nextval('s'))`, string(contracts.RefuseFunctionDenied)},
		{`SELECT JSON_OBJECT('a': current_setting('data_directory'))`, string(contracts.RefuseFunctionDenied)},
		{`SELECT MERGE_ACTION()`, string(contracts.RefuseFunctionDenied)},
		{`SELECT * FROM JSON_TABLE('[1]', '$[*]' COLUMNS (a int PATH '$'))`, string(contracts.RefuseTableFunction)},
	} {
		if _, ref := guard.Check(postgres.Reader{ServerVersion: 170004}, c.sql, postgrestest.Policy()); ref == nil || string(ref.Code) != c.code {
			t.Errorf("%s on PostgreSQL 17: %+v, want %s", c.sql, ref, c.code)
		}
	}
	read17 := func(q string) {
		t.Helper()
		if _, ref := guard.Check(postgres.Reader{ServerVersion: 170004}, q, postgrestest.Policy()); ref != nil {
			t.Errorf("%s on PostgreSQL 17: refused %s (%s)", q, ref.Code, ref.Message)
		}
	}
	read17(`SELECT JSON_OBJECT('n': count(*) RETURNING jsonb), JSON_ARRAYAGG(amount ORDER BY id) FROM orders`)
	read17(`SELECT JSON_VALUE(data, '$.n' RETURNING int DEFAULT 0 ON ERROR) FROM events WHERE event_date >= current_date - 1`)
}

// TestHostileCorpusOnANewServer runs the hostile corpus for a server that
// knows every spelling the guard's parser does: only the version-gated
// shapes pass, the rest are refused as on any server.
func TestHostileCorpusOnANewServer(t *testing.T) {
	for _, c := range postgrestest.Hostile {
		_, ref := guard.Check(postgres.Reader{ServerVersion: 180001}, c.SQL, postgrestest.Policy())
		if _, gated := postgrestest.GrammarSince[c.Name]; gated {
			continue
		}
		if ref == nil || ref.Code != c.Code {
			t.Errorf("%s on PostgreSQL 18: %+v, want %s", c.Name, ref, c.Code)
		}
	}
}

// TestXMLRefusedAsUninterruptible holds every XML spelling to the refusal
// that says why (issue 17, item 4): libxml2 runs without PostgreSQL's
// interrupt checks, so a statement timeout does not stop it.
func TestXMLRefusedAsUninterruptible(t *testing.T) {
	for _, q := range []string{
		`SELECT xpath('//a', '<r/>')`, `SELECT xpath_exists('//a', '<r/>')`, `SELECT pg_catalog.xpath('//a', '<r/>')`,
		`SELECT XMLEXISTS('//a' PASSING '<r/>')`, `SELECT xml('<r/>')`, `SELECT xmlagg(NULL)`, `SELECT xmlcomment('x')`,
		`SELECT xml_is_well_formed_document('<r/>')`, `SELECT (c.name).xpath FROM customers c`,
		`SELECT XMLPARSE(CONTENT 'x')`, `SELECT XMLELEMENT(NAME a)`, `SELECT XMLCONCAT(NULL)`, `SELECT XMLFOREST(1 AS a)`,
		`SELECT XMLPI(NAME php)`, `SELECT XMLROOT(NULL, VERSION NO VALUE)`, `SELECT XMLSERIALIZE(CONTENT 'x' AS text)`,
		`SELECT '<r/>' IS DOCUMENT`, `SELECT '<r/>'::xml`, `SELECT CAST('<r/>' AS pg_catalog.xml)`, `SELECT ARRAY['<r/>']::xml[]`,
	} {
		_, ref := postgres.Reader{ServerVersion: 170004}.Read(q)
		if ref == nil || ref.Code != contracts.RefuseFunctionDenied || !strings.Contains(ref.Message, "libxml2") {
			t.Errorf("%s: %+v, want function_denied naming libxml2", q, ref)
		}
	}
	if postgres.FunctionAllowed("xpath") || postgres.AttributeAllowed("xpath") {
		t.Error("xpath allowed")
	}
	// A column whose name merely begins with xml is still a column.
	read(t, `SELECT c.xml_payload FROM customers c`)
}
