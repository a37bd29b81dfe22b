package guard

import (
	"testing"

	"github.com/sondehq/sonde/contracts"
)

// admits applies p to one table read under rule.
func admits(rule NameRule, p Policy, t Table) *contracts.Refusal {
	return Apply(&Statement{Names: rule, Scopes: []Scope{{Tables: []Table{t}}}}, p)
}

func TestReadablePatternsFollowEngineNames(t *testing.T) {
	pg := Policy{DefaultSchema: "public"}
	sqlite := Policy{DefaultSchema: "main"}
	mssql := Policy{DefaultSchema: "dbo"}
	cases := []struct {
		name     string
		rule     NameRule
		policy   Policy
		readable []string
		table    Table
		ok       bool
	}{
		// PostgreSQL: the reader hands over names as the parser folded them.
		{"pg: unquoted genre", NamesExact, pg, []string{"public.genre"}, Table{Name: "genre"}, true},
		{"pg: \"GENRE\" is another table", NamesExact, pg, []string{"public.genre"}, Table{Name: "GENRE"}, false},
		{"pg: pattern folds like the parser", NamesExact, pg, []string{"public.Genre"}, Table{Name: "genre"}, true},
		{"pg: quoted pattern keeps case", NamesExact, pg, []string{`public."GENRE"`}, Table{Name: "GENRE"}, true},
		{"pg: quoted pattern is not the folded name", NamesExact, pg, []string{`public."GENRE"`}, Table{Name: "genre"}, false},
		{"pg: public.* reads public", NamesExact, pg, []string{"public.*"}, Table{Schema: "public", Name: "salaries"}, true},
		{"pg: public.* is not \"Public\"", NamesExact, pg, []string{"public.*"}, Table{Schema: "Public", Name: "salaries"}, false},
		{"pg: * never crosses a dot", NamesExact, pg, []string{"public.*"}, Table{Schema: "public.x", Name: "y"}, false},
		{"pg: dotted quoted schema named exactly", NamesExact, pg, []string{`"public.x".y`}, Table{Schema: "public.x", Name: "y"}, true},
		{"pg: unqualified pattern is the default schema", NamesExact, pg, []string{"genre"}, Table{Schema: "sales", Name: "genre"}, false},
		{"pg: prefix is not a match", NamesExact, pg, []string{"public.orders"}, Table{Name: "orders_archive"}, false},
		{"pg: a star inside a part", NamesExact, pg, []string{"public.orders_*"}, Table{Name: "orders_archive"}, true},
		{"pg: a star inside a part, other prefix", NamesExact, pg, []string{"public.orders_*"}, Table{Name: "ordersx"}, false},
		{"pg: * is every schema", NamesExact, pg, []string{"*"}, Table{Schema: "sales", Name: "x"}, true},
		// SQLite: ASCII case-insensitive, no schema means main.
		{"sqlite: mixed-case pattern without main.", NamesASCIIFold, sqlite, []string{"Genre", "Track"}, Table{Name: "genre"}, true},
		{"sqlite: mixed-case pattern, schema main", NamesASCIIFold, sqlite, []string{"Genre", "Track"}, Table{Schema: "main", Name: "TRACK"}, true},
		{"sqlite: another table", NamesASCIIFold, sqlite, []string{"Genre", "Track"}, Table{Name: "album"}, false},
		{"sqlite: another schema", NamesASCIIFold, sqlite, []string{"Genre"}, Table{Schema: "aux", Name: "genre"}, false},
		{"sqlite: bracketed pattern", NamesASCIIFold, sqlite, []string{"main.[Order Items]"}, Table{Name: "order items"}, true},
		{"sqlite: only ASCII folds", NamesASCIIFold, sqlite, []string{"Émis"}, Table{Name: "émis"}, false},
		{"sqlite: prefix is not a match", NamesASCIIFold, sqlite, []string{"orders"}, Table{Name: "orders_archive"}, false},
		// SQL Server and DuckDB: case-insensitive.
		{"mssql: bracketed, any case", NamesFold, mssql, []string{"dbo.[Order Details]"}, Table{Schema: "DBO", Name: "order details"}, true},
		{"mssql: a long s is not an s", NamesFold, mssql, []string{"dbo.salaries"}, Table{Schema: "dbo", Name: "ſalaries"}, false},
		{"mssql: prefix is not a match", NamesFold, mssql, []string{"dbo.orders"}, Table{Name: "orders_archive"}, false},
	}
	for _, c := range cases {
		p := c.policy
		p.Readable = c.readable
		ref := admits(c.rule, p, c.table)
		if c.ok != (ref == nil) {
			t.Errorf("%s: %v admits %+v = %v (%+v)", c.name, c.readable, c.table, ref == nil, ref)
		}
		if ref != nil && (ref.Code != contracts.RefuseTableNotReadable || ref.Fix == "") {
			t.Errorf("%s: %+v", c.name, ref)
		}
		if got := p.CanRead(c.rule, c.table); got != c.ok {
			t.Errorf("%s: CanRead = %v", c.name, got)
		}
	}
}

func TestSystemTablesOnlyWhenNamed(t *testing.T) {
	pgClass := Table{Schema: "pg_catalog", Name: "pg_class", System: true}
	master := Table{Schema: "main", Name: "sqlite_master", System: true}
	bareMaster := Table{Name: "sqlite_master", System: true}
	sysObjects := Table{Schema: "sys", Name: "objects", System: true}
	cases := []struct {
		rule     NameRule
		def      string
		readable []string
		table    Table
		ok       bool
	}{
		{NamesExact, "public", nil, pgClass, false},
		{NamesExact, "public", []string{"*"}, pgClass, false},
		{NamesExact, "public", []string{"*.*"}, pgClass, false},
		{NamesExact, "public", []string{"public.*"}, pgClass, false},
		{NamesExact, "public", []string{"*.pg_class"}, pgClass, false},
		{NamesExact, "public", []string{"pg_class"}, pgClass, false}, // that is public.pg_class
		{NamesExact, "public", []string{"pg_catalog.pg_*"}, pgClass, true},
		{NamesExact, "public", []string{"pg_catalog.*"}, pgClass, true},
		{NamesExact, "public", []string{"pg_catalog.pg_class"}, pgClass, true},
		{NamesASCIIFold, "main", []string{"main.*"}, master, false},
		{NamesASCIIFold, "main", []string{"*"}, bareMaster, false},
		{NamesASCIIFold, "main", []string{"main.sqlite_*"}, master, false},
		{NamesASCIIFold, "main", []string{"main.sqlite_master"}, master, true},
		{NamesASCIIFold, "main", []string{"SQLITE_MASTER"}, bareMaster, true},
		{NamesFold, "main", []string{"main.*"}, Table{Schema: "main", Name: "duckdb_columns", System: true}, false},
		{NamesFold, "dbo", []string{"dbo.*"}, sysObjects, false},
		{NamesFold, "dbo", []string{"sys.*"}, sysObjects, true},
		{NamesFold, "dbo", []string{"SYS.OBJECTS"}, sysObjects, true},
	}
	for _, c := range cases {
		ref := admits(c.rule, Policy{DefaultSchema: c.def, Readable: c.readable}, c.table)
		if c.ok != (ref == nil) {
			t.Errorf("%v admits system %+v = %v (%+v)", c.readable, c.table, ref == nil, ref)
		}
	}
	// A non-system table of the same name is an ordinary table.
	if ref := admits(NamesASCIIFold, Policy{DefaultSchema: "main", Readable: []string{"main.*"}}, Table{Name: "sqlite_stuff"}); ref != nil {
		t.Errorf("ordinary table refused: %+v", ref)
	}
}

func TestValidatePattern(t *testing.T) {
	for _, ok := range []string{"*", "public.*", `"a.b".c`, "sales.orders", "orders", " public . orders "} {
		if err := ValidatePattern(ok, NamesExact); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a.b.c", `"unclosed`, "a..b", "a.", `a"b`, `""`} {
		if err := ValidatePattern(bad, NamesExact); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := ValidatePattern("dbo.[a]]b]", NamesFold); err != nil {
		t.Errorf("bracket escape: %v", err)
	}
	if err := ValidatePattern("public.[a]", NamesExact); err == nil {
		t.Error("brackets are no PostgreSQL quotes")
	}
}

func TestLargeTableKeysFollowEngineNames(t *testing.T) {
	// The key is written as a pattern is; whatever the engine might read as
	// the key's table needs the bound, and the bound's names compare the way
	// the engine compares them.
	pg := Policy{DefaultSchema: "public", LargeTables: map[string]string{"public.Invoice": "Invoice_Date"}}
	inv := Table{Name: "invoice", Alias: "i"}
	cases := []struct {
		name  string
		rule  NameRule
		p     Policy
		scope Scope
		ok    bool
	}{
		{"pg: key folds, unbounded", NamesExact, pg, Scope{Tables: []Table{inv}}, false},
		{"pg: key folds, bounded", NamesExact, pg, Scope{Tables: []Table{inv}, Bounds: []Bound{{Qualifier: "i", Column: "invoice_date"}}}, true},
		{"pg: \"INVOICE\" might be it", NamesExact, pg, Scope{Tables: []Table{{Name: "INVOICE"}}}, false},
		{"pg: quoted column is another column", NamesExact, pg, Scope{Tables: []Table{inv}, Bounds: []Bound{{Qualifier: "i", Column: "Invoice_Date"}}}, false},
		{"pg: quoted alias is another alias", NamesExact, pg, Scope{Tables: []Table{inv, {Name: "x", Alias: "I"}}, Bounds: []Bound{{Qualifier: "I", Column: "invoice_date"}}}, false},
		{"mssql: a long s still needs the bound", NamesFold, Policy{DefaultSchema: "dbo", LargeTables: map[string]string{"dbo.sales": "d"}}, Scope{Tables: []Table{{Name: "ſales"}}}, false},
		{"sqlite: mixed-case key, no schema", NamesASCIIFold, Policy{DefaultSchema: "main", LargeTables: map[string]string{"Events": "Day"}}, Scope{Tables: []Table{{Name: "EVENTS"}}}, false},
		{"sqlite: mixed-case key, bounded", NamesASCIIFold, Policy{DefaultSchema: "main", LargeTables: map[string]string{"Events": "Day"}}, Scope{Tables: []Table{{Name: "EVENTS"}}, Bounds: []Bound{{Column: "DAY"}}}, true},
	}
	for _, c := range cases {
		ref := Apply(&Statement{Names: c.rule, Scopes: []Scope{c.scope}}, c.p)
		if c.ok != (ref == nil) || ref != nil && ref.Code != contracts.RefuseLargeTableUnbounded {
			t.Errorf("%s: %+v", c.name, ref)
		}
	}
}

func TestOuterJoinBoundLimits(t *testing.T) {
	p := Policy{DefaultSchema: "public", LargeTables: map[string]string{"public.invoice": "invoice_date"}}
	tables := []Table{{Name: "invoice", Alias: "i"}, {Name: "customer", Alias: "c"}}
	bound := func(limits []string) Scope {
		return Scope{Tables: tables, Bounds: []Bound{{Qualifier: "i", Column: "invoice_date", Limits: limits}}}
	}
	cases := []struct {
		name  string
		scope Scope
		ok    bool
	}{
		{"WHERE or inner ON: nil limits every table", bound(nil), true},
		{"ON of invoice LEFT JOIN customer limits customer only", bound([]string{"c"}), false},
		{"ON of customer LEFT JOIN invoice limits invoice", bound([]string{"i"}), true},
		{"ON of a FULL join limits nothing", bound([]string{}), false},
	}
	for _, c := range cases {
		for _, rule := range []NameRule{NamesFold, NamesExact, NamesASCIIFold} {
			ref := Apply(&Statement{Names: rule, Scopes: []Scope{c.scope}}, p)
			if c.ok != (ref == nil) || ref != nil && ref.Code != contracts.RefuseLargeTableUnbounded {
				t.Errorf("%s (%v): %+v", c.name, rule, ref)
			}
		}
	}
}

func TestGlob(t *testing.T) {
	cases := []struct {
		pat, s string
		ok     bool
	}{
		{"*", "", true}, {"*", "abc", true}, {"a*", "a", true}, {"a*", "ba", false},
		{"*c", "abc", true}, {"*c", "cb", false}, {"a*c", "ac", true}, {"a*c", "abcbc", true},
		{"ab*b", "ab", false}, {"a*b*c", "aXbYc", true}, {"a*b*c", "acb", false}, {"abc", "abc", true},
	}
	for _, c := range cases {
		if got := (namePart{text: c.pat}).match(c.s, func(s string) string { return s }); got != c.ok {
			t.Errorf("%q ~ %q = %v", c.pat, c.s, got)
		}
	}
}
