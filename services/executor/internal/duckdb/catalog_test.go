package duckdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// writeFile creates a database file from stmts with a writable instance and
// returns its path once that instance is closed.
func writeFile(t testing.TB, name string, stmts ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range stmts {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if _, err := db.Exec("CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// catalogFixture holds every shape the inventory reads: two schemas, a
// mixed-case table name, composite unique constraints, foreign keys (one to
// a table no pattern allows), plain, unique and expression indexes, a view,
// and objects that are not relations (a sequence, a macro).
func catalogFixture(t testing.TB) string {
	return writeFile(t, "catalog.duckdb",
		"CREATE SCHEMA sales",
		"CREATE TABLE customers (id INTEGER PRIMARY KEY, email VARCHAR NOT NULL UNIQUE, country VARCHAR, region VARCHAR, UNIQUE (country, region))",
		`CREATE TABLE "Orders" (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers (id), total DECIMAL(10,2), placed DATE, tags VARCHAR[])`,
		`CREATE INDEX orders_placed ON "Orders" (placed)`,
		`CREATE UNIQUE INDEX orders_customer_placed ON "Orders" (customer_id, placed)`,
		`CREATE INDEX orders_double ON "Orders" ((total * 2))`,
		"CREATE TABLE secrets (id INTEGER PRIMARY KEY, token VARCHAR)",
		"CREATE TABLE audit (id INTEGER, secret_id INTEGER REFERENCES secrets (id), customer_id INTEGER REFERENCES customers (id))",
		`CREATE VIEW big_orders AS SELECT id, total FROM "Orders" WHERE total > 100`,
		`CREATE TABLE sales.regions (code VARCHAR PRIMARY KEY, "Display Name" VARCHAR)`,
		`CREATE INDEX regions_display ON sales.regions ("Display Name")`,
		"CREATE SEQUENCE sales.seq",
		"CREATE MACRO plus_one(x) AS x + 1",
		"INSERT INTO customers VALUES (1, 'a@x', 'DE', 'N'), (2, 'b@x', 'DE', 'S'), (3, 'c@x', 'FR', 'N')",
		`INSERT INTO "Orders" SELECT i, 1 + i % 3, i * 40, DATE '2025-01-01' + i::INTEGER, ['x'] FROM range(1, 6) t(i)`,
	)
}

// catalogReadable allows everything but main.secrets, written in another
// case than the names are stored in.
var catalogReadable = []string{"MAIN.customers", "main.ORDERS", "main.audit", "Main.Big_Orders", "SALES.*"}

var catalogReq = engine.Request{Timeout: 10 * time.Second}

func names(rels []contracts.Relation) []string {
	out := make([]string, len(rels))
	for i, r := range rels {
		out[i] = fmt.Sprintf("%s:%s/%s", r.QualifiedName(), r.Kind, r.EngineKind)
	}
	return out
}

func TestRelations(t *testing.T) {
	e := open(t, catalogFixture(t), catalogReadable, nil)
	cat, err := e.Relations(context.Background(), catalogReq)
	if err != nil {
		t.Fatal(err)
	}
	// (schema, name) order as DuckDB compares: "Orders" before "audit".
	want := []string{
		"main.Orders:table/BASE TABLE", "main.audit:table/BASE TABLE", "main.big_orders:view/VIEW",
		"main.customers:table/BASE TABLE", "sales.regions:table/BASE TABLE",
	}
	if got := names(cat.Relations); !reflect.DeepEqual(got, want) {
		t.Errorf("relations\n got %q\nwant %q", got, want)
	}
	if cat.Unreadable != 1 {
		t.Errorf("unreadable = %d, want 1 (main.secrets)", cat.Unreadable)
	}
	if cat.Statements != 1 || len(cat.SQL) != 1 || !strings.Contains(cat.SQL[0], "duckdb_views()") {
		t.Errorf("statements %d, SQL %q", cat.Statements, cat.SQL)
	}
	for _, r := range cat.Relations {
		if r.Columns != nil || r.Stats != nil {
			t.Errorf("%s: Relations describes only names and kinds: %+v", r.QualifiedName(), r)
		}
	}

	// The read path holds: a cancelled caller ends the catalog read, and
	// its bounds refuse rather than truncate.
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	var dbErr *contracts.DBError
	if _, err := e.Relations(cctx, catalogReq); !errors.As(err, &dbErr) || dbErr.Class != contracts.DBCancelled {
		t.Errorf("cancelled: %v, want class cancelled", err)
	}
	if l := e.catalogLimits(); l.Truncate || l.MaxRows != CatalogMaxRows || l.MaxBytes < 8<<20 {
		t.Errorf("catalog limits %+v", l)
	}

	// Without patterns every relation is readable.
	all, err := open(t, catalogFixture(t), nil, nil).Relations(context.Background(), catalogReq)
	if err != nil || len(all.Relations) != 6 || all.Unreadable != 0 {
		t.Errorf("no patterns: %q, %d unreadable, %v", names(all.Relations), all.Unreadable, err)
	}
}

func TestDescribe(t *testing.T) {
	e := open(t, catalogFixture(t), catalogReadable, nil)
	rels := []contracts.Relation{
		{Schema: "MAIN", Name: "ORDERS"}, // names as a user writes them
		{Schema: "main", Name: "customers", Kind: contracts.RelationTable},
		{Schema: "main", Name: "secrets"}, // no pattern allows it
		{Schema: "main", Name: "audit"},
		{Schema: "sales", Name: "gone"}, // readable, but no longer exists
		{Schema: "main", Name: "big_orders"},
		{Schema: "sales", Name: "regions"},
		{Schema: "sales", Name: "seq"}, // a sequence is not a relation
	}
	cat, err := e.Describe(context.Background(), catalogReq, rels)
	if err != nil {
		t.Fatal(err)
	}
	rows := func(n float64) *contracts.RelationStats { return &contracts.RelationStats{Rows: n} }
	want := []contracts.Relation{
		{Schema: "main", Name: "Orders", Kind: contracts.RelationTable, EngineKind: "BASE TABLE",
			Columns: []contracts.RelationColumn{
				{Name: "id", Type: "INTEGER"}, {Name: "customer_id", Type: "INTEGER", Nullable: true},
				{Name: "total", Type: "DECIMAL(10,2)", Nullable: true}, {Name: "placed", Type: "DATE", Nullable: true},
				{Name: "tags", Type: "VARCHAR[]", Nullable: true},
			},
			PrimaryKey: []string{"id"},
			ForeignKeys: []contracts.ForeignKey{{Name: "Orders_customer_id_id_fkey", Columns: []string{"customer_id"},
				RefSchema: "main", RefName: "customers", RefColumns: []string{"id"}}},
			Indexes: []contracts.Index{
				{Name: "orders_customer_placed", Unique: true, Columns: []string{"customer_id", "placed"}},
				{Name: "orders_double", Columns: []string{"((total * 2))"}},
				{Name: "orders_placed", Columns: []string{"placed"}},
			},
			Stats: rows(5)},
		{Schema: "main", Name: "customers", Kind: contracts.RelationTable, EngineKind: "BASE TABLE",
			Columns: []contracts.RelationColumn{
				{Name: "id", Type: "INTEGER"}, {Name: "email", Type: "VARCHAR"},
				{Name: "country", Type: "VARCHAR", Nullable: true}, {Name: "region", Type: "VARCHAR", Nullable: true},
			},
			PrimaryKey: []string{"id"},
			Unique:     [][]string{{"email"}, {"country", "region"}},
			Stats:      rows(3)},
		{Schema: "main", Name: "audit", Kind: contracts.RelationTable, EngineKind: "BASE TABLE",
			Columns: []contracts.RelationColumn{
				{Name: "id", Type: "INTEGER", Nullable: true}, {Name: "secret_id", Type: "INTEGER", Nullable: true},
				{Name: "customer_id", Type: "INTEGER", Nullable: true},
			},
			// The foreign key to main.secrets is left out: it would name it.
			ForeignKeys: []contracts.ForeignKey{{Name: "audit_customer_id_id_fkey", Columns: []string{"customer_id"},
				RefSchema: "main", RefName: "customers", RefColumns: []string{"id"}}},
			Stats: rows(0)},
		{Schema: "main", Name: "big_orders", Kind: contracts.RelationView, EngineKind: "VIEW",
			Columns: []contracts.RelationColumn{
				{Name: "id", Type: "INTEGER", Nullable: true}, {Name: "total", Type: "DECIMAL(10,2)", Nullable: true},
			}},
		{Schema: "sales", Name: "regions", Kind: contracts.RelationTable, EngineKind: "BASE TABLE",
			Columns: []contracts.RelationColumn{
				{Name: "code", Type: "VARCHAR"}, {Name: "Display Name", Type: "VARCHAR", Nullable: true},
			},
			PrimaryKey: []string{"code"},
			Indexes:    []contracts.Index{{Name: "regions_display", Columns: []string{"Display Name"}}},
			Stats:      rows(0)},
	}
	if !reflect.DeepEqual(cat.Relations, want) {
		got, _ := json.MarshalIndent(cat.Relations, "", " ")
		exp, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("described\n got %s\nwant %s", got, exp)
	}
	if cat.Unreadable != 1 {
		t.Errorf("unreadable = %d, want 1", cat.Unreadable)
	}
	if cat.StatisticsSource != "duckdb_tables().estimated_size" {
		t.Errorf("statistics source %q", cat.StatisticsSource)
	}
	if cat.Statements != 2 || len(cat.SQL) != 2 {
		t.Errorf("statements %d, SQL %d", cat.Statements, len(cat.SQL))
	}

	// Nothing readable to describe: nothing is sent.
	none, err := e.Describe(context.Background(), catalogReq, []contracts.Relation{{Schema: "main", Name: "secrets"}})
	if err != nil || len(none.Relations) != 0 || none.Unreadable != 1 || none.Statements != 0 {
		t.Errorf("only an unreadable relation: %+v, %v", none, err)
	}
	// More than the inventory's bound at once is refused, with a fix.
	_, err = e.Describe(context.Background(), catalogReq, make([]contracts.Relation, contracts.DefaultInventoryObjects+1))
	var ref *contracts.Refusal
	if !errors.As(err, &ref) || ref.Code != contracts.RefuseBadRequest || ref.Fix == "" {
		t.Errorf("too many relations: %v", err)
	}
}

// An index's key parts: columns by name, however DuckDB quotes them;
// expressions as DuckDB writes them.
func TestDescribeIndexParts(t *testing.T) {
	path := writeFile(t, "parts.duckdb",
		`CREATE TABLE "W, t" ("a, b" INTEGER, "it's" VARCHAR, "q""x" INTEGER, "[z]" INTEGER, Plain INTEGER)`,
		`CREATE INDEX i1 ON "W, t" ("a, b", "it's", "q""x", "[z]", plain, (Plain + 1), lower("it's"))`,
	)
	e := open(t, path, nil, nil)
	cat, err := e.Describe(context.Background(), catalogReq, []contracts.Relation{{Schema: "main", Name: "w, T"}})
	if err != nil || len(cat.Relations) != 1 || len(cat.Relations[0].Indexes) != 1 {
		t.Fatalf("%+v, %v", cat, err)
	}
	got := cat.Relations[0].Indexes[0].Columns
	want := []string{"a, b", "it's", `q"x`, "[z]", "Plain"}
	if len(got) != 7 || !reflect.DeepEqual(got[:5], want) {
		t.Errorf("index parts %q, want %q then two expressions", got, want)
	}
	for _, expr := range got[5:] {
		if !strings.HasPrefix(expr, "(") {
			t.Errorf("expression part %q", expr)
		}
	}
}

func TestIdentifier(t *testing.T) {
	for in, want := range map[string]string{
		"plain": "plain", "_x1": "_x1", `"a b"`: "a b", `"q""x"`: `q"x`, `""""`: `"`,
	} {
		if got, ok := identifier(in); !ok || got != want {
			t.Errorf("identifier(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "1x", "(a + 1)", `"a"b"`, `"a`, "a.b", `"`} {
		if got, ok := identifier(in); ok {
			t.Errorf("identifier(%q) = %q, want none", in, got)
		}
	}
}

// manyTables writes a file of n tables (each with a primary key, a foreign
// key to the one before, a unique constraint and an index) and a view for
// every tenth.
func manyTables(t testing.TB, n int) string {
	var b strings.Builder
	b.WriteString("BEGIN;\n")
	for i := range n {
		fmt.Fprintf(&b, "CREATE TABLE t%05d (id INTEGER PRIMARY KEY, code VARCHAR UNIQUE, amount DECIMAL(12,2), created DATE", i)
		if i > 0 {
			fmt.Fprintf(&b, ", prev_id INTEGER REFERENCES t%05d (id)", i-1)
		}
		b.WriteString(");\n")
		fmt.Fprintf(&b, "CREATE INDEX t%05d_created ON t%05d (created);\n", i, i)
		if i%10 == 0 {
			fmt.Fprintf(&b, "CREATE VIEW v%05d AS SELECT id, amount FROM t%05d;\n", i, i)
		}
	}
	b.WriteString("COMMIT;")
	return writeFile(t, fmt.Sprintf("many%d.duckdb", n), b.String())
}

// Describe costs the same two statements for ten relations as for all
// 1,100 of a 1,000-table file, and every relation comes back whole.
func TestDescribeManyTables(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 1,000-table file")
	}
	e := open(t, manyTables(t, 1000), nil, nil)
	ctx := context.Background()
	cat, err := e.Relations(ctx, catalogReq)
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Relations) != 1100 || cat.Statements != 1 {
		t.Fatalf("%d relations in %d statements", len(cat.Relations), cat.Statements)
	}
	ten, err := e.Describe(ctx, catalogReq, cat.Relations[:10])
	if err != nil {
		t.Fatal(err)
	}
	all, err := e.Describe(ctx, catalogReq, cat.Relations)
	if err != nil {
		t.Fatal(err)
	}
	if ten.Statements != all.Statements || all.Statements != 2 {
		t.Errorf("statements: %d for 10, %d for %d", ten.Statements, all.Statements, len(cat.Relations))
	}
	if len(all.Relations) != 1100 {
		t.Fatalf("described %d of 1100", len(all.Relations))
	}
	for i, r := range all.Relations {
		if r.Name != cat.Relations[i].Name {
			t.Fatalf("relation %d is %s, want %s (the order given)", i, r.Name, cat.Relations[i].Name)
		}
		if r.Kind == contracts.RelationView {
			if len(r.Columns) != 2 || r.Stats != nil {
				t.Errorf("%s: %+v", r.Name, r)
			}
			continue
		}
		fks := 1
		if r.Name == "t00000" {
			fks = 0
		}
		if len(r.Columns) != 4+fks || len(r.PrimaryKey) != 1 || len(r.Unique) != 1 || len(r.ForeignKeys) != fks ||
			len(r.Indexes) != 1 || r.Stats == nil {
			t.Errorf("%s: %+v", r.Name, r)
		}
	}
}

func TestGuard(t *testing.T) {
	e := open(t, catalogFixture(t), catalogReadable, nil)
	reader, pol, err := e.Guard(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if pol.DefaultSchema != "main" || !reflect.DeepEqual(pol.Readable, catalogReadable) {
		t.Errorf("policy %+v", pol)
	}
	if _, ref := guard.Check(reader, `SELECT id FROM orders`, pol); ref != nil {
		t.Errorf("a readable table: %v", ref)
	}
	if _, ref := guard.Check(reader, `SELECT token FROM secrets`, pol); ref == nil || ref.Code != contracts.RefuseTableNotReadable {
		t.Errorf("an unreadable table: %v", ref)
	}
	if _, ref := guard.Check(reader, `DELETE FROM orders`, pol); ref == nil {
		t.Error("a write passed the guard")
	}
	e.Close()
	if _, _, err := e.Guard(context.Background()); err == nil {
		t.Error("a closed engine handed out its guard")
	}
}

// BenchmarkInventory measures what the executor's inventory costs on DuckDB:
// Relations, then Describe of every relation (n tables and n/10 views).
func BenchmarkInventory(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("tables=%d", n), func(b *testing.B) {
			e := open(b, manyTables(b, n), nil, nil)
			ctx := context.Background()
			b.ResetTimer()
			for b.Loop() {
				cat, err := e.Relations(ctx, catalogReq)
				if err != nil {
					b.Fatal(err)
				}
				rels := cat.Relations[:min(len(cat.Relations), contracts.DefaultInventoryObjects)]
				desc, err := e.Describe(ctx, catalogReq, rels)
				if err != nil || len(desc.Relations) != len(rels) {
					b.Fatalf("%v: %d of %d", err, len(desc.Relations), len(rels))
				}
			}
		})
	}
}
