package mssql

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	guardmssql "github.com/sondehq/sonde/pkg/guard/mssql"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// These tests hold the composed catalog SQL and the mapping of its rows, as
// value() hands them over, to relations. That SQL Server answers the
// statements with those rows is for TestLiveCatalog (live_test.go).

// offline is an engine with no server behind it: what runs before any
// statement is sent.
func offline(readable []string) *Engine {
	return &Engine{l: &login{catalog: "shop", defaultSchema: "dbo"}, readable: readable, opMem: DefaultOperationMemory}
}

func TestRelationsSQL(t *testing.T) {
	for _, want := range []string{
		"sys.objects", "sys.schemas", "o.type IN ('U', 'V', 'ET')", "o.is_ms_shipped = 0",
		"s.name NOT IN (N'sys', N'INFORMATION_SCHEMA')", "ORDER BY s.name, o.name",
	} {
		if !strings.Contains(RelationsSQL, want) {
			t.Errorf("RelationsSQL lacks %q", want)
		}
	}
}

func TestRelationsFrom(t *testing.T) {
	rows := [][]any{
		{"dbo", "Orders", "U"},
		{"dbo", "customers", "U"},
		{"dbo", "secrets", "U"},
		{"dbo", "sysobjects", "U"}, // resolves to the compatibility view: a pattern must name it
		{"dbo", "recent_orders", "V"},
		{"lake", "clicks", "ET"},
		{"Sales", "Regions", "U"},
	}
	pol := offline([]string{"DBO.orders", "dbo.customers", "dbo.recent_orders", "lake.*", "sales.*", "dbo.sys*"}).policy(&login{catalog: "shop", defaultSchema: "dbo"})
	rels, unreadable := relationsFrom(rows, canRead(pol))
	want := []contracts.Relation{
		{Schema: "dbo", Name: "Orders", Kind: contracts.RelationTable, EngineKind: "U"},
		{Schema: "dbo", Name: "customers", Kind: contracts.RelationTable, EngineKind: "U"},
		{Schema: "dbo", Name: "recent_orders", Kind: contracts.RelationView, EngineKind: "V"},
		{Schema: "lake", Name: "clicks", Kind: contracts.RelationForeignTable, EngineKind: "ET"},
		{Schema: "Sales", Name: "Regions", Kind: contracts.RelationTable, EngineKind: "U"},
	}
	if !reflect.DeepEqual(rels, want) {
		t.Errorf("relations\n got %+v\nwant %+v", rels, want)
	}
	if unreadable != 2 {
		t.Errorf("unreadable = %d, want 2 (secrets, sysobjects)", unreadable)
	}
	// No patterns: every relation but the one that resolves to a catalog.
	rels, unreadable = relationsFrom(rows, canRead(offline(nil).policy(&login{defaultSchema: "dbo"})))
	if len(rels) != 6 || unreadable != 1 {
		t.Errorf("no patterns: %d relations, %d unreadable", len(rels), unreadable)
	}
}

func TestDescribeSQL(t *testing.T) {
	want := []contracts.Relation{{Schema: "dbo", Name: "o'brien"}, {Schema: "Sales", Name: "Order Details"}}
	columns, keys := DescribeSQL(want)
	for _, stmt := range []string{columns, keys} {
		if !strings.Contains(stmt, "(1, N'dbo', N'o''brien'),\n  (2, N'Sales', N'Order Details')\n) AS v (i, s, n)") {
			t.Errorf("the relations asked for are not written as quoted literals in order:\n%s", stmt)
		}
		if !strings.Contains(stmt, "o.type IN ('U', 'V', 'ET') AND o.is_ms_shipped = 0") {
			t.Errorf("not held to the relations Relations lists:\n%s", stmt)
		}
	}
	for _, w := range []string{"sys.columns", "TYPE_NAME(c.user_type_id)", "sys.partitions WHERE index_id IN (0, 1)", "SUM(rows)", "ORDER BY r.i, c.column_id"} {
		if !strings.Contains(columns, w) {
			t.Errorf("columns statement lacks %q", w)
		}
	}
	for _, w := range []string{"sys.indexes", "sys.index_columns", "is_primary_key", "is_unique_constraint", "sys.foreign_keys", "sys.foreign_key_columns", "ORDER BY 1, 2, 3, 4"} {
		if !strings.Contains(keys, w) {
			t.Errorf("keys statement lacks %q", w)
		}
	}
	// A name is data, never text of the statement.
	hostile, _ := DescribeSQL([]contracts.Relation{{Schema: "dbo", Name: "x'), (2, N'dbo', N'y')); DROP TABLE t; --"}})
	if !strings.Contains(hostile, "(1, N'dbo', N'x''), (2, N''dbo'', N''y'')); DROP TABLE t; --')\n) AS v") {
		t.Errorf("a hostile name escaped its literal:\n%s", hostile)
	}

	// The same two statements for any number of relations: only the list
	// of literals grows.
	many := make([]contracts.Relation, contracts.DefaultInventoryObjects)
	for i := range many {
		many[i] = contracts.Relation{Schema: "dbo", Name: "t"}
	}
	bigColumns, bigKeys := DescribeSQL(many)
	tail := func(s string) string { return s[strings.Index(s, ") AS v (i, s, n)"):] }
	if tail(bigColumns) != tail(columns) || tail(bigKeys) != tail(keys) {
		t.Error("the statements change shape with the number of relations")
	}
	if n := strings.Count(bigColumns, "N'dbo'"); n != contracts.DefaultInventoryObjects {
		t.Errorf("%d relations written, want %d", n, contracts.DefaultInventoryObjects)
	}
}

func TestDescribeFrom(t *testing.T) {
	readable := func(schema, name string) bool { return !strings.EqualFold(name, "secrets") }
	// Rows of the columns statement: i, schema, name, type, column,
	// type name, max_length, precision, scale, is_nullable, row count.
	cols := [][]any{
		{int64(1), "dbo", "Lines", "U", "order_id", "int", int64(4), int64(10), int64(0), false, int64(1200)},
		{int64(1), "dbo", "Lines", "U", "n", "int", int64(4), int64(10), int64(0), false, int64(1200)},
		{int64(1), "dbo", "Lines", "U", "note", "nvarchar", int64(200), int64(0), int64(0), true, int64(1200)},
		{int64(1), "dbo", "Lines", "U", "body", "varchar", int64(-1), int64(0), int64(0), true, int64(1200)},
		{int64(1), "dbo", "Lines", "U", "amount", "decimal", int64(9), int64(12), int64(2), true, int64(1200)},
		{int64(1), "dbo", "Lines", "U", "at", "datetime2", int64(7), int64(23), int64(3), true, int64(1200)},
		{int64(1), "dbo", "Lines", "U", "phone", "Phone", int64(40), int64(0), int64(0), true, int64(1200)},
		// position 2 (dbo.gone) has no rows: it no longer exists.
		{int64(3), "dbo", "recent", "V", "order_id", "int", int64(4), int64(10), int64(0), true, nil},
		{int64(4), "lake", "clicks", "ET", "url", "nvarchar", int64(-1), int64(0), int64(0), true, nil},
		{int64(5), "dbo", "empty", "U", "id", "int", int64(4), int64(10), int64(0), false, int64(0)},
		{int64(6), "dbo", "hidden", "U", nil, nil, nil, nil, nil, nil, nil},                   // no column the login may see
		{int64(9), "dbo", "stray", "U", "x", "int", int64(4), int64(10), int64(0), true, nil}, // not asked for
	}
	// Rows of the keys statement: i, kind, name, ordinal, column, and the
	// referenced schema, name and column of a foreign key.
	keys := [][]any{
		{int64(1), "FK", "lines_order", int64(1), "order_id", "dbo", "Orders", "id"},
		{int64(1), "FK", "lines_pair", int64(1), "order_id", "dbo", "Pairs", "a"},
		{int64(1), "FK", "lines_pair", int64(2), "n", "dbo", "Pairs", "b"},
		{int64(1), "FK", "lines_secret", int64(1), "n", "dbo", "secrets", "id"},
		{int64(1), "FK", "lines_unseen", int64(1), "n", nil, nil, nil},
		{int64(1), "IX", "lines_z", int64(1), "at", nil, nil, nil},
		{int64(1), "IX", "lines_z", int64(2), "amount", nil, nil, nil},
		{int64(1), "PK", "lines_pk", int64(1), "order_id", nil, nil, nil},
		{int64(1), "PK", "lines_pk", int64(2), "n", nil, nil, nil},
		{int64(1), "UQ", "lines_note", int64(1), "note", nil, nil, nil},
		{int64(1), "UX", "lines_a", int64(1), "note", nil, nil, nil},
		{int64(1), "UX", "lines_a", int64(2), "n", nil, nil, nil},
		{int64(2), "PK", "gone_pk", int64(1), "id", nil, nil, nil},
	}
	got := describeFrom(6, cols, keys, readable)
	want := []contracts.Relation{
		{Schema: "dbo", Name: "Lines", Kind: contracts.RelationTable, EngineKind: "U",
			Columns: []contracts.RelationColumn{
				{Name: "order_id", Type: "int"}, {Name: "n", Type: "int"},
				{Name: "note", Type: "nvarchar(100)", Nullable: true}, {Name: "body", Type: "varchar(max)", Nullable: true},
				{Name: "amount", Type: "decimal(12,2)", Nullable: true}, {Name: "at", Type: "datetime2(3)", Nullable: true},
				{Name: "phone", Type: "Phone", Nullable: true},
			},
			PrimaryKey: []string{"order_id", "n"},
			Unique:     [][]string{{"note"}},
			ForeignKeys: []contracts.ForeignKey{
				{Name: "lines_order", Columns: []string{"order_id"}, RefSchema: "dbo", RefName: "Orders", RefColumns: []string{"id"}},
				{Name: "lines_pair", Columns: []string{"order_id", "n"}, RefSchema: "dbo", RefName: "Pairs", RefColumns: []string{"a", "b"}},
			},
			Indexes: []contracts.Index{
				{Name: "lines_a", Unique: true, Columns: []string{"note", "n"}},
				{Name: "lines_z", Columns: []string{"at", "amount"}},
			},
			Stats: &contracts.RelationStats{Rows: 1200}},
		{Schema: "dbo", Name: "recent", Kind: contracts.RelationView, EngineKind: "V",
			Columns: []contracts.RelationColumn{{Name: "order_id", Type: "int", Nullable: true}}},
		{Schema: "lake", Name: "clicks", Kind: contracts.RelationForeignTable, EngineKind: "ET",
			Columns: []contracts.RelationColumn{{Name: "url", Type: "nvarchar(max)", Nullable: true}}},
		{Schema: "dbo", Name: "empty", Kind: contracts.RelationTable, EngineKind: "U",
			Columns: []contracts.RelationColumn{{Name: "id", Type: "int"}},
			Stats:   &contracts.RelationStats{Rows: 0}},
		{Schema: "dbo", Name: "hidden", Kind: contracts.RelationTable, EngineKind: "U", Columns: []contracts.RelationColumn{}},
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("described\n got %s\nwant %s", g, w)
	}
}

func TestColumnType(t *testing.T) {
	cases := []struct {
		name         string
		maxLen, p, s int64
		want         string
	}{
		{"nvarchar", 100, 0, 0, "nvarchar(50)"},
		{"nchar", -1, 0, 0, "nchar(max)"},
		{"varbinary", -1, 0, 0, "varbinary(max)"},
		{"char", 2, 0, 0, "char(2)"},
		{"numeric", 9, 18, 4, "numeric(18,4)"},
		{"time", 5, 16, 7, "time(7)"},
		{"datetimeoffset", 10, 34, 7, "datetimeoffset(7)"},
		{"int", 4, 10, 0, "int"},
		{"datetime", 8, 23, 3, "datetime"},
		{"geography", -1, 0, 0, "geography"},
		{"OrderCode", 20, 0, 0, "OrderCode"}, // an alias type stands by its name
	}
	for _, c := range cases {
		if got := columnType(c.name, c.maxLen, c.p, c.s); got != c.want {
			t.Errorf("columnType(%s, %d, %d, %d) = %s, want %s", c.name, c.maxLen, c.p, c.s, got, c.want)
		}
	}
}

// What Describe decides before sending anything: too many relations is
// refused; only unreadable ones sends nothing.
func TestDescribeOffline(t *testing.T) {
	e := offline([]string{"dbo.orders"})
	_, err := e.Describe(context.Background(), engine.Request{}, make([]contracts.Relation, contracts.DefaultInventoryObjects+1))
	var ref *contracts.Refusal
	if !errors.As(err, &ref) || ref.Code != contracts.RefuseBadRequest || ref.Fix == "" {
		t.Errorf("too many relations: %v", err)
	}
	cat, err := e.Describe(context.Background(), engine.Request{}, []contracts.Relation{{Schema: "dbo", Name: "secrets"}, {Schema: "sys", Name: "objects"}})
	if err != nil || cat.Unreadable != 2 || cat.Statements != 0 || len(cat.Relations) != 0 {
		t.Errorf("only unreadable relations: %+v, %v", cat, err)
	}
	if cat.StatisticsSource != "sys.partitions row counts" {
		t.Errorf("statistics source %q", cat.StatisticsSource)
	}
}

func TestGuard(t *testing.T) {
	e := offline([]string{"dbo.orders"})
	reader, pol, err := e.Guard(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := reader.(guardmssql.Reader); !ok || pol.Catalog != "shop" || pol.DefaultSchema != "dbo" {
		t.Errorf("guard %T, policy %+v", reader, pol)
	}
	if _, ref := guard.Check(reader, "SELECT id FROM Orders", pol); ref != nil {
		t.Errorf("a readable table: %v", ref)
	}
	if _, ref := guard.Check(reader, "SELECT id FROM dbo.secrets", pol); ref == nil || ref.Code != contracts.RefuseTableNotReadable {
		t.Errorf("an unreadable table: %v", ref)
	}
}
