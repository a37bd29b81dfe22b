package grounding

import (
	"slices"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	enginespec "github.com/sondehq/sonde/pkg/engine"
)

// TestReadDeliverableTags: a block tagged for the run's engine under any of
// its names outranks every other SQL block; a block tagged sql, for another
// engine or untagged is read when it is the only candidate (the guard then
// judges it in the run's dialect); several different candidates are none.
func TestReadDeliverableTags(t *testing.T) {
	cases := []struct {
		name    string
		engine  contracts.Engine
		text    string
		sql     string
		tag     string
		foreign bool
		cands   int
		other   int
	}{
		{"postgresql", contracts.EnginePostgres, "```PostgreSQL\nSELECT 1\n```", "SELECT 1", "PostgreSQL", false, 1, 0},
		{"pgsql", contracts.EnginePostgres, "```pgsql\nSELECT 1\n```", "SELECT 1", "pgsql", false, 1, 0},
		{"sqlite3", contracts.EngineSQLite, "```SQLite3\nSELECT 1\n```", "SELECT 1", "SQLite3", false, 1, 0},
		{"duckdb", contracts.EngineDuckDB, "```duckdb\nSELECT 1\n```", "SELECT 1", "duckdb", false, 1, 0},
		{"t-sql", contracts.EngineMSSQL, "```T-SQL\nSELECT TOP 1 1\n```", "SELECT TOP 1 1", "T-SQL", false, 1, 0},
		{"sqlserver", contracts.EngineMSSQL, "```sqlserver\nSELECT 1\n```", "SELECT 1", "sqlserver", false, 1, 0},
		{"tsql on postgres is read, foreign", contracts.EnginePostgres, "```tsql\nSELECT TOP 5 * FROM t\n```", "SELECT TOP 5 * FROM t", "tsql", true, 1, 0},
		{"SQL any case", contracts.EngineSQLite, "```SQL\nSELECT 1\n```", "SELECT 1", "SQL", true, 1, 0},
		{"untagged", contracts.EngineDuckDB, "```\nSELECT 1\n```", "SELECT 1", "", true, 1, 0},
		{"the engine's tag outranks sql", contracts.EngineSQLite, "Before:\n```sql\nSELECT * FROM t\n```\nAfter:\n```sqlite\nSELECT n FROM t\n```", "SELECT n FROM t", "sqlite", false, 1, 1},
		{"two sql blocks are none", contracts.EngineSQLite, "```sql\nSELECT * FROM t\n```\n```sql\nSELECT n FROM t\n```", "", "", false, 2, 2},
		{"the same statement twice is one", contracts.EngineSQLite, "```sqlite\nSELECT 1\n```\nagain:\n```sqlite\nSELECT 1\n```", "SELECT 1", "sqlite", false, 1, 1},
		{"a json block is no candidate", contracts.EngineSQLite, "```json\n{}\n```\n```sql\nSELECT 1\n```", "SELECT 1", "sql", true, 1, 1},
	}
	for _, c := range cases {
		d := ReadDeliverable(c.text, c.engine)
		if d.SQL != c.sql || d.Tag != c.tag || d.ForeignTag != c.foreign || d.Candidates != c.cands || d.OtherBlocks != c.other {
			t.Errorf("%s: %+v", c.name, d)
		}
	}
}

// TestNoStatementOutweighsASketch: a NO STATEMENT: line beside a block that
// does not name the engine is a decline; beside one that does, the block is
// the statement.
func TestNoStatementOutweighsASketch(t *testing.T) {
	d := ReadDeliverable("NO STATEMENT: no sessions table. With one:\n```sql\nSELECT * FROM sessions\n```", contracts.EngineSQLite)
	if !d.Declined || d.SQL != "" || d.OtherBlocks != 1 {
		t.Errorf("decline with a sketch: %+v", d)
	}
	d = ReadDeliverable("NO STATEMENT: maybe\n```sqlite\nSELECT 1\n```", contracts.EngineSQLite)
	if d.Declined || d.SQL != "SELECT 1" {
		t.Errorf("decline beside the engine's block: %+v", d)
	}
}

// TestReadIndex: one CREATE INDEX on plain columns is read; anything it
// does not read is refused, a second statement above all.
func TestReadIndex(t *testing.T) {
	good := []struct {
		sql    string
		engine contracts.Engine
		want   IndexDraft
	}{
		{"CREATE INDEX orders_status ON orders (status)", contracts.EngineSQLite, IndexDraft{Table: "orders", Columns: []string{"status"}}},
		{"create unique index if not exists ix on main.Orders(Status DESC, id);", contracts.EngineSQLite,
			IndexDraft{Unique: true, Schema: "main", Table: "Orders", Columns: []string{"Status", "id"}}},
		{`CREATE INDEX CONCURRENTLY ON public."Orders" USING btree (Status NULLS LAST) INCLUDE (total) WHERE status = 'paid'`, contracts.EnginePostgres,
			IndexDraft{Schema: "public", Table: "Orders", Columns: []string{"status"}, Include: []string{"total"}, Predicate: "status = 'paid'"}},
		{"CREATE NONCLUSTERED INDEX ix ON [dbo].[orders] ([status]) INCLUDE ([total]) -- why\n", contracts.EngineMSSQL,
			IndexDraft{Schema: "dbo", Table: "orders", Columns: []string{"status"}, Include: []string{"total"}}},
		{"CREATE INDEX ix ON t (a) WHERE a IN (1, 2) AND NOT (b IS NULL)", contracts.EngineDuckDB, IndexDraft{Table: "t", Columns: []string{"a"}, Predicate: "a IN (1, 2) AND NOT (b IS NULL)"}},
	}
	for _, c := range good {
		got, ok := ReadIndex(c.sql, c.engine)
		if !ok || got.Unique != c.want.Unique || got.Schema != c.want.Schema || got.Table != c.want.Table ||
			!slices.Equal(got.Columns, c.want.Columns) || !slices.Equal(got.Include, c.want.Include) || got.Predicate != c.want.Predicate {
			t.Errorf("%q: %+v %v, want %+v", c.sql, got, ok, c.want)
		}
	}
	for _, sql := range []string{
		"CREATE INDEX ix ON t (a); DELETE FROM t",
		"CREATE INDEX ix ON t (a) WHERE a = 1; DELETE FROM t",
		"CREATE INDEX ix ON t (lower(a))",
		"CREATE INDEX ix ON t (a) WHERE setval('s', 1) > 0",
		"CREATE INDEX ix ON t (a) WHERE a IN (SELECT 1)",
		"CREATE INDEX ix ON t (a) WITH (fillfactor = 70)",
		"CREATE TABLE t (a int)",
		"DROP INDEX ix",
		"CREATE INDEX ix ON t ()",
		"CREATE INDEX ix ON t (a /* unclosed",
		"CREATE INDEX ix ON t (a) WHERE a = $$x$$",
		"SELECT 1",
		"CREATE INDEX ix ON t (a) WHERE",
	} {
		if got, ok := ReadIndex(sql, contracts.EnginePostgres); ok {
			t.Errorf("%q read as %+v", sql, got)
		}
	}
}

// TestIndexCheckAndNearest: an index draft's table and columns are checked
// like a read's names, and the names the snapshot holds near an unknown one
// are offered.
func TestIndexCheckAndNearest(t *testing.T) {
	inv := &contracts.Inventory{Total: 2, Relations: []contracts.Relation{
		{Schema: "main", Name: "orders", Columns: []contracts.RelationColumn{{Name: "id"}, {Name: "status"}, {Name: "customer_id"}}},
		{Schema: "main", Name: "customers", Columns: []contracts.RelationColumn{{Name: "id"}, {Name: "country"}}},
	}}
	ix, ok := ReadIndex("CREATE INDEX ix ON Orders (statsu, customer_id)", contracts.EngineSQLite)
	if !ok {
		t.Fatal("not read")
	}
	chk := IndexCheck(inv, ix, contracts.EngineSQLite)
	ic := Identifiers(inv, chk)
	if ic.Status != contracts.IdentifiersChecked || len(ic.UnknownRelations) != 0 || strings.Join(ic.UnknownColumns, ",") != `"main"."orders"."statsu"` {
		t.Fatalf("identifiers %+v", ic)
	}
	near := Nearest(inv, chk)
	if len(near) != 1 || near[0] != `instead of "main"."orders"."statsu": "status"` {
		t.Fatalf("nearest %q", near)
	}
	read := &contracts.StatementCheck{FoldCase: true, ColumnsRead: true,
		Relations: []contracts.NameRef{{Schema: "main", Name: "order"}, {Schema: "main", Name: "customers"}, {Schema: "main", Name: "sessions"}},
		Columns:   []contracts.ColumnRef{{Relation: contracts.NameRef{Schema: "main", Name: "customers"}, Column: "nonexistent"}}}
	got := strings.Join(Nearest(inv, read), " | ")
	for _, want := range []string{`instead of "main"."order": "main"."orders"`, `instead of "main"."sessions": no table spelled like it`,
		`instead of "main"."customers"."nonexistent": one of its columns, "id", "country"`} {
		if !strings.Contains(got, want) {
			t.Errorf("nearest %q lacks %q", got, want)
		}
	}
	if Nearest(nil, read) != nil {
		t.Error("nearest names offered with no inventory")
	}
}

// TestIndexCheckUnknownEngineNeverFolds: an engine no Spec declares (a new
// one whose spec was not written yet) is never given a case-folding name
// rule by default: its index draft's names compare exactly, so a name that
// differs in case is reported unknown rather than silently matched.
func TestIndexCheckUnknownEngineNeverFolds(t *testing.T) {
	inv := &contracts.Inventory{Total: 1, Relations: []contracts.Relation{
		{Schema: "app", Name: "orders", Columns: []contracts.RelationColumn{{Name: "id"}, {Name: "status"}}},
	}}
	const unknown = contracts.Engine("mysql")
	ix, ok := ReadIndex("CREATE INDEX ix ON Orders (Status)", unknown)
	if !ok {
		t.Fatal("not read")
	}
	chk := IndexCheck(inv, ix, unknown)
	if chk.FoldCase {
		t.Fatalf("an undeclared engine's names fold case: %+v", chk)
	}
	if ic := Identifiers(inv, chk); len(ic.UnknownRelations) == 0 {
		t.Fatalf("Orders matched orders on an engine whose name rule is unknown: %+v", ic)
	}
	// A declared folding engine still folds.
	if chk := IndexCheck(inv, ix, contracts.EngineDuckDB); !chk.FoldCase {
		t.Fatalf("duckdb's names no longer fold: %+v", chk)
	}
}

// TestEngineTagsAreNotGeneric: no engine's fence tag is also read as a
// generic SQL tag, so a block tagged for an engine (a new one's too) ranks
// as that engine's, never as plain SQL.
func TestEngineTagsAreNotGeneric(t *testing.T) {
	for _, s := range enginespec.All() {
		for _, tag := range s.DialectAliases {
			if slices.Contains(genericSQLTags, tag) {
				t.Errorf("%s's fence tag %q is also a generic SQL tag", s.Name, tag)
			}
			if tagRank(strings.ToUpper(tag), s.Name) != 2 {
				t.Errorf("a block tagged %q does not rank as %s's own", tag, s.Name)
			}
		}
	}
}
