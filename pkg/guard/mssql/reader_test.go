package mssql

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// policy is the connection the corpora are checked against.
var policy = guard.Policy{
	Readable:      []string{"dbo.*", "sales.*"},
	LargeTables:   map[string]string{"dbo.events": "event_date", "dbo.invoice": "invoice_date"},
	DefaultSchema: "dbo",
	Catalog:       "shop",
}

func TestHostileCorpus(t *testing.T) {
	if len(hostile) < 20 {
		t.Fatalf("the hostile corpus holds %d shapes; at least 20", len(hostile))
	}
	for _, c := range hostile {
		st, ref := guard.Check(Reader{}, c.sql, policy)
		switch {
		case ref == nil:
			t.Errorf("%q passed (%+v), want %s", c.sql, st, c.code)
		case ref.Code != c.code:
			t.Errorf("%q: %s (%s), want %s", c.sql, ref.Code, ref.Message, c.code)
		case ref.Message == "" || ref.Fix == "":
			t.Errorf("%q: refusal without reason or fix: %+v", c.sql, ref)
		}
	}
}

func TestValidCorpus(t *testing.T) {
	for _, sql := range valid {
		if _, ref := guard.Check(Reader{}, sql, policy); ref != nil {
			t.Errorf("%q refused: %s: %s (fix: %s)", sql, ref.Code, ref.Message, ref.Fix)
		}
	}
}

// TestEveryCodeCovered keeps the corpus honest: every guard code a T-SQL
// reader can give appears in it.
func TestEveryCodeCovered(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range hostile {
		seen[string(c.code)] = true
	}
	for _, code := range contracts.GuardRefusalCodes {
		if code == contracts.RefuseEngineParse {
			continue // the engine's own showplan gives it; see the executor
		}
		if !seen[string(code)] {
			t.Errorf("no hostile shape refused with %s", code)
		}
	}
}

func tables(st *guard.Statement) [][]guard.Table {
	var out [][]guard.Table
	for _, sc := range st.Scopes {
		out = append(out, sc.Tables)
	}
	return out
}

func TestTablesAndCTEScoping(t *testing.T) {
	cases := []struct {
		sql  string
		want []string
	}{
		{"SELECT * FROM orders", []string{"dbo.orders"}},
		{"WITH orders AS (SELECT * FROM sales.orders) SELECT * FROM orders", []string{"sales.orders"}},
		// A CTE shadows only the unqualified name.
		{"WITH x AS (SELECT 1 AS a) SELECT * FROM x JOIN dbo.x AS y ON 1 = 1", []string{"dbo.x"}},
		// A CTE is not visible in the ones defined before it.
		{"WITH a AS (SELECT * FROM b), b AS (SELECT 1 AS y) SELECT * FROM a", []string{"dbo.b"}},
		// A recursive CTE reads itself, which is no table.
		{"WITH r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT * FROM r", nil},
		{"SELECT (SELECT MAX(id) FROM sales.refunds) AS m, o.id FROM dbo.orders o WHERE o.id IN (SELECT order_id FROM [sales].[Returns])",
			[]string{"dbo.orders", "sales.refunds", "sales.returns"}},
		{"SELECT * FROM [my db].[my schema].[my table]", []string{"my schema.my table"}},
	}
	for _, c := range cases {
		st, ref := Reader{}.Read(c.sql)
		if ref != nil {
			t.Errorf("%q: %+v", c.sql, ref)
			continue
		}
		if got := st.Tables("dbo"); !reflect.DeepEqual(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("%q: tables %v, want %v", c.sql, got, c.want)
		}
	}
	st, _ := Reader{}.Read("SELECT * FROM [my db].[my schema].[my table] AS t")
	if got := tables(st); got[0][0] != (guard.Table{Catalog: "my db", Schema: "my schema", Name: "my table", Alias: "t"}) {
		t.Errorf("three-part name read as %+v", got)
	}
	st, _ = Reader{}.Read("SELECT * FROM otherdb..orders")
	if got := tables(st); got[0][0] != (guard.Table{Catalog: "otherdb", Name: "orders"}) {
		t.Errorf("db..table read as %+v", got)
	}
}

func TestBounds(t *testing.T) {
	cases := []struct {
		sql  string
		want []guard.Bound
	}{
		{"SELECT * FROM dbo.events WHERE event_date >= '2026-01-01' AND kind = 'x'",
			[]guard.Bound{{Column: "event_date"}, {Column: "kind"}}},
		{"SELECT * FROM dbo.events e WHERE e.event_date > DATEADD(day, -7, GETDATE())", []guard.Bound{{Qualifier: "e", Column: "event_date"}}},
		{"SELECT * FROM dbo.events e WHERE e.event_date < '2026-01-01'", nil},
		{"SELECT * FROM dbo.events e WHERE NOT (NOT (e.event_date >= 1))", []guard.Bound{{Qualifier: "e", Column: "event_date"}}},
		{"SELECT * FROM dbo.events e WHERE NOT e.event_date <= 1", []guard.Bound{{Qualifier: "e", Column: "event_date"}}},
		{"SELECT * FROM dbo.events e WHERE e.a >= 1 OR e.b >= 2", nil},
		{"SELECT * FROM dbo.events e WHERE e.a >= e.b", nil},
		// A value the reader does not evaluate bounds nothing it can vouch for.
		{"SELECT * FROM dbo.events e WHERE e.a >= CASE WHEN 1 = 1 THEN 2 END", []guard.Bound{{Qualifier: "e", Column: "a", Vacuous: "the guard cannot work out the value it is compared with"}}},
		{"SELECT * FROM dbo.events e WHERE e.a IN (1, (SELECT 2))", nil},
		{"SELECT * FROM dbo.events e JOIN dbo.u ON u.id = e.uid AND e.d >= 3 WHERE ((e.f = 1 AND u.g BETWEEN 1 AND 2))",
			[]guard.Bound{{Qualifier: "u", Column: "id"}, {Qualifier: "e", Column: "uid"}, {Qualifier: "e", Column: "d"}, {Qualifier: "e", Column: "f"}, {Qualifier: "u", Column: "g"}}[2:]},
		// Unqualified with several sources: not a bound.
		{"SELECT * FROM dbo.events, dbo.u WHERE d >= 1", nil},
		{"SELECT * FROM dbo.events CROSS APPLY STRING_SPLIT('a', ',') s WHERE d >= 1", nil},
	}
	for _, c := range cases {
		st, ref := Reader{}.Read(c.sql)
		if ref != nil {
			t.Errorf("%q: %+v", c.sql, ref)
			continue
		}
		got := st.Scopes[len(st.Scopes)-1].Bounds
		if !reflect.DeepEqual(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("%q: bounds %+v, want %+v", c.sql, got, c.want)
		}
	}
}

func TestTextAndCanonical(t *testing.T) {
	st, ref := Reader{}.Read("  select  a.id ,\n\tcount( * ) AS [n]  -- c\n from dbo.orders a /* x */ where note = N'It''s ; ok' ;  -- end\n;")
	if ref != nil {
		t.Fatal(ref)
	}
	if want := "  select  a.id ,\n\tcount( * ) AS [n]  -- c\n from dbo.orders a /* x */ where note = N'It''s ; ok'"; st.Text != want {
		t.Errorf("text %q, want %q", st.Text, want)
	}
	if want := "SELECT a.id, COUNT(*) AS n FROM dbo.orders a WHERE note = N'It''s ; ok'"; st.Canonical != want {
		t.Errorf("canonical %q, want %q", st.Canonical, want)
	}
	other, _ := Reader{}.Read("SELECT a.id, COUNT(*) AS n FROM dbo.orders a WHERE note = N'It''s ; ok'")
	if other.Canonical != st.Canonical {
		t.Errorf("layout changed the canonical form: %q vs %q", other.Canonical, st.Canonical)
	}
	lit, _ := Reader{}.Read("SELECT a.id, COUNT(*) AS n FROM dbo.orders a WHERE note = N'other'")
	if lit.Canonical == st.Canonical {
		t.Error("the canonical form dropped a literal")
	}
}

func TestLexer(t *testing.T) {
	toks, err := lex("SELECT [a]]b], \"c\"\"d\", N'x''y', @v, @@ROWCOUNT, #t, ##g, 0xAF, 1.5e-3 /* /* */ */ -- x\n<> !<")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tk := range toks {
		if tk.kind != tPunct || tk.text != "," {
			got = append(got, tk.text)
		}
	}
	want := []string{"SELECT", "a]b", `c"d`, "N'x''y'", "@v", "@@ROWCOUNT", "#t", "##g", "0xAF", "1.5e-3", "<>", "!<", ""}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tokens %q, want %q", got, want)
	}
	for _, bad := range []string{"'x", "[x", `"x`, "/* /* */", "@", "SELECT {", "SELECT `x`"} {
		if _, err := lex(bad); err == nil {
			t.Errorf("%q lexed", bad)
		}
	}
}

func TestRefusalNamesWhere(t *testing.T) {
	_, ref := Reader{}.Read("SELECT a FROM dbo.t WHERE")
	if ref == nil || ref.Code != contracts.RefuseUnparsable || !strings.Contains(ref.Message, "byte") {
		t.Errorf("%+v: want unparsable naming where the reader stopped", ref)
	}
}

func TestDeepNestingRefused(t *testing.T) {
	sql := "SELECT " + strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000)
	if _, ref := (Reader{}).Read(sql); ref == nil || ref.Code != contracts.RefuseUnsupported && ref.Code != contracts.RefuseTooComplex {
		t.Errorf("deep nesting: %+v", ref)
	}
}
