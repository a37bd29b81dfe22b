package sqlite

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
	"github.com/sondehq/sonde/pkg/sqlitegen"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// inventoryDDL is a schema with every shape Describe reads: composite and
// implicit primary-key references, unique constraints beside unique and
// expression indexes, a generated column, a WITHOUT ROWID table, a view, an
// FTS5 virtual table (whose shadow tables are tables), AUTOINCREMENT's
// sqlite_sequence, and names that differ from their references in case.
var inventoryDDL = []string{
	`CREATE TABLE parent (a INTEGER, b TEXT, label TEXT UNIQUE, PRIMARY KEY (a, b))`,
	`CREATE TABLE solo (id INTEGER PRIMARY KEY AUTOINCREMENT, code TEXT NOT NULL)`,
	`CREATE TABLE child (
		id INTEGER PRIMARY KEY,
		pa INTEGER NOT NULL, pb TEXT,
		solo_id INTEGER REFERENCES solo,
		x TEXT, y TEXT,
		total REAL GENERATED ALWAYS AS (pa * 2) VIRTUAL,
		UNIQUE (x, y),
		FOREIGN KEY (pa, pb) REFERENCES parent (a, b))`,
	`CREATE INDEX child_x ON child (x DESC, lower("y") COLLATE NOCASE)`,
	`CREATE UNIQUE INDEX child_pb ON child (pb)`,
	`CREATE INDEX child_partial ON child (solo_id) WHERE solo_id IS NOT NULL`,
	`CREATE TABLE hidden_parent (id INTEGER PRIMARY KEY)`,
	`CREATE TABLE child2 (c1, c2, c3 REFERENCES hidden_parent, c4 REFERENCES missing, c5 REFERENCES SOLO,
		FOREIGN KEY (c1, c2) REFERENCES PARENT)`,
	`CREATE TABLE wr (k TEXT PRIMARY KEY, v) WITHOUT ROWID`,
	`CREATE VIEW child_v AS SELECT id, x FROM child`,
	`CREATE VIRTUAL TABLE docs USING fts5(body, title)`,
	`CREATE TABLE "Upper" ("ID" INTEGER)`,
	`INSERT INTO parent VALUES (1, 'a', 'one'), (2, 'b', 'two'), (3, 'c', 'three')`,
	`INSERT INTO solo (code) VALUES ('s1'), ('s2')`,
	`INSERT INTO child (id, pa, pb, solo_id, x, y) VALUES (1, 1, 'a', 1, 'p', 'q'), (2, 2, 'b', NULL, 'p', 'r'),
		(3, 3, 'c', 2, 'p', 's'), (4, 1, 'd', 1, 'p', 't'), (5, 2, 'e', NULL, 'p', 'u')`,
}

// writeFile writes a database at a new path with the package-level driver.
func writeFile(t testing.TB, stmts ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "inventory.db")
	execFile(t, path, stmts...)
	return path
}

func execFile(t testing.TB, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func relationNames(rels []contracts.Relation) string {
	names := make([]string, len(rels))
	for i, r := range rels {
		names[i] = r.Name
	}
	return strings.Join(names, ",")
}

var catalogReq = engine.Request{Timeout: 10 * time.Second}

func inventory(t testing.TB, e *Engine) (engine.Catalog, engine.Catalog) {
	t.Helper()
	ctx := context.Background()
	rels, err := e.Relations(ctx, catalogReq)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := e.Describe(ctx, catalogReq, rels.Relations)
	if err != nil {
		t.Fatal(err)
	}
	return rels, desc
}

func TestRelationsKinds(t *testing.T) {
	e := open(t, writeFile(t, inventoryDDL...))
	cat, err := e.Relations(context.Background(), catalogReq)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range cat.Relations {
		if r.Schema != "main" {
			t.Errorf("%s: schema %q", r.Name, r.Schema)
		}
		if r.Columns != nil || r.Stats != nil {
			t.Errorf("%s: Relations described it", r.Name)
		}
		got = append(got, fmt.Sprintf("%s:%s:%s", r.Name, r.Kind, r.EngineKind))
	}
	// Binary name order; sqlite_sequence left out; FTS5's shadow tables are
	// the tables they are.
	want := []string{"Upper:table:table", "child:table:table", "child2:table:table", "child_v:view:view",
		"docs:virtual table:table", "docs_config:table:table", "docs_content:table:table",
		"docs_data:table:table", "docs_docsize:table:table", "docs_idx:table:table",
		"hidden_parent:table:table", "parent:table:table", "solo:table:table", "wr:table:table"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("relations\n got %q\nwant %q", got, want)
	}
	if cat.Statements != 1 || len(cat.SQL) != 1 || cat.SQL[0] != RelationsSQL || cat.Unreadable != 0 {
		t.Errorf("statements %d %q, unreadable %d", cat.Statements, cat.SQL, cat.Unreadable)
	}
}

// relationNamed returns the relation named name, failing the test when
// Describe left it out.
func relationNamed(t *testing.T, cat engine.Catalog, name string) contracts.Relation {
	t.Helper()
	for _, r := range cat.Relations {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("%s not described; got %s", name, relationNames(cat.Relations))
	return contracts.Relation{}
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestDescribeExactly(t *testing.T) {
	path := writeFile(t, inventoryDDL...)
	e := open(t, path)
	rels, cat := inventory(t, e)
	if got := relationNames(cat.Relations); got != relationNames(rels.Relations) {
		t.Fatalf("described %s, listed %s", got, relationNames(rels.Relations))
	}
	// Without ANALYZE: four statements, no statistics anywhere.
	if cat.Statements != 4 || cat.StatisticsSource != "" {
		t.Errorf("statements %d %q, statistics %q", cat.Statements, cat.SQL, cat.StatisticsSource)
	}
	for _, r := range cat.Relations {
		if r.Stats != nil {
			t.Errorf("%s: statistics %+v before ANALYZE", r.Name, r.Stats)
		}
	}
	col := func(name, typ string, nullable bool) contracts.RelationColumn {
		return contracts.RelationColumn{Name: name, Type: typ, Nullable: nullable}
	}
	want := map[string]contracts.Relation{
		"parent": {Schema: "main", Name: "parent", Kind: contracts.RelationTable, EngineKind: "table",
			Columns:    []contracts.RelationColumn{col("a", "INTEGER", true), col("b", "TEXT", true), col("label", "TEXT", true)},
			PrimaryKey: []string{"a", "b"}, Unique: [][]string{{"label"}}},
		"solo": {Schema: "main", Name: "solo", Kind: contracts.RelationTable, EngineKind: "table",
			Columns:    []contracts.RelationColumn{col("id", "INTEGER", false), col("code", "TEXT", false)},
			PrimaryKey: []string{"id"}},
		"child": {Schema: "main", Name: "child", Kind: contracts.RelationTable, EngineKind: "table",
			Columns: []contracts.RelationColumn{col("id", "INTEGER", false), col("pa", "INTEGER", false),
				col("pb", "TEXT", true), col("solo_id", "INTEGER", true), col("x", "TEXT", true),
				col("y", "TEXT", true), col("total", "REAL", true)},
			PrimaryKey: []string{"id"}, Unique: [][]string{{"x", "y"}},
			ForeignKeys: []contracts.ForeignKey{
				{Columns: []string{"solo_id"}, RefSchema: "main", RefName: "solo", RefColumns: []string{"id"}},
				{Columns: []string{"pa", "pb"}, RefSchema: "main", RefName: "parent", RefColumns: []string{"a", "b"}}},
			Indexes: []contracts.Index{{Name: "child_partial", Columns: []string{"solo_id"}},
				{Name: "child_pb", Unique: true, Columns: []string{"pb"}},
				{Name: "child_x", Columns: []string{"x", `lower("y")`}}}},
		"child2": {Schema: "main", Name: "child2", Kind: contracts.RelationTable, EngineKind: "table",
			Columns: []contracts.RelationColumn{col("c1", "", true), col("c2", "", true), col("c3", "", true),
				col("c4", "", true), col("c5", "", true)},
			ForeignKeys: []contracts.ForeignKey{
				{Columns: []string{"c3"}, RefSchema: "main", RefName: "hidden_parent", RefColumns: []string{"id"}},
				{Columns: []string{"c4"}, RefSchema: "main", RefName: "missing", RefColumns: []string{}},
				{Columns: []string{"c5"}, RefSchema: "main", RefName: "solo", RefColumns: []string{"id"}},
				{Columns: []string{"c1", "c2"}, RefSchema: "main", RefName: "parent", RefColumns: []string{"a", "b"}}}},
		"wr": {Schema: "main", Name: "wr", Kind: contracts.RelationTable, EngineKind: "table",
			Columns: []contracts.RelationColumn{col("k", "TEXT", false), col("v", "", true)}, PrimaryKey: []string{"k"}},
		"child_v": {Schema: "main", Name: "child_v", Kind: contracts.RelationView, EngineKind: "view",
			Columns: []contracts.RelationColumn{col("id", "INTEGER", true), col("x", "TEXT", true)}},
		// FTS5's hidden columns (docs, rank) are left out.
		"docs": {Schema: "main", Name: "docs", Kind: contracts.RelationVirtualTable, EngineKind: "table",
			Columns: []contracts.RelationColumn{col("body", "", true), col("title", "", true)}},
		"Upper": {Schema: "main", Name: "Upper", Kind: contracts.RelationTable, EngineKind: "table",
			Columns: []contracts.RelationColumn{col("ID", "INTEGER", true)}},
	}
	for name, w := range want {
		if got := relationNamed(t, cat, name); !reflect.DeepEqual(got, w) {
			t.Errorf("%s\n got %s\nwant %s", name, asJSON(got), asJSON(w))
		}
	}

	// ANALYZE writes sqlite_stat1: row estimates for the tables it counted
	// (rows of the table or of its largest index), none for an empty one.
	execFile(t, path, "ANALYZE")
	_, cat = inventory(t, e)
	if cat.Statements != 5 || cat.StatisticsSource != StatisticsSource {
		t.Errorf("after ANALYZE: statements %d, statistics %q", cat.Statements, cat.StatisticsSource)
	}
	for name, rows := range map[string]float64{"parent": 3, "solo": 2, "child": 5} {
		st := relationNamed(t, cat, name).Stats
		if st == nil || st.Rows != rows {
			t.Errorf("%s: stats %s, want %v rows", name, asJSON(st), rows)
		}
	}
	for _, name := range []string{"child2", "wr", "Upper", "child_v", "docs"} {
		if st := relationNamed(t, cat, name).Stats; st != nil {
			t.Errorf("%s: stats %s for a relation ANALYZE counted no row of", name, asJSON(st))
		}
	}
	// The leading column of a full index: distinct values from the average
	// rows per value (x is 'p' in every row; label is unique).
	child, parent := relationNamed(t, cat, "child").Stats, relationNamed(t, cat, "parent").Stats
	if d := child.Columns["x"].Distinct; d == nil || *d != 1 {
		t.Errorf("child.x distinct %s", asJSON(child.Columns))
	}
	if _, ok := child.Columns["solo_id"]; ok {
		t.Errorf("child.solo_id has an estimate from a partial index: %s", asJSON(child.Columns))
	}
	if d := parent.Columns["label"].Distinct; d == nil || *d != 3 {
		t.Errorf("parent.label distinct %s", asJSON(parent.Columns))
	}
}

// TestDescribeNames: Describe reads names as SQLite does (ASCII case
// folded) and answers with the stored name, in the order asked, dropping a
// relation that does not exist and one outside main.
func TestDescribeNames(t *testing.T) {
	e := open(t, writeFile(t, inventoryDDL...))
	cat, err := e.Describe(context.Background(), catalogReq, []contracts.Relation{
		{Schema: "MAIN", Name: "SOLO", Kind: contracts.RelationTable},
		{Schema: "main", Name: "gone", Kind: contracts.RelationTable},
		{Schema: "temp", Name: "parent", Kind: contracts.RelationTable},
		{Schema: "main", Name: "Child_V", Kind: contracts.RelationView},
		{Schema: "main", Name: "upper"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := relationNames(cat.Relations); got != "solo,child_v,Upper" {
		t.Errorf("described %s", got)
	}
	if len(cat.Relations[0].Columns) != 2 || len(cat.Relations[1].Columns) != 2 || cat.Relations[2].Kind != contracts.RelationTable {
		t.Errorf("described %s", asJSON(cat.Relations))
	}
}

// TestInventoryReadable: relations the readable patterns do not admit are
// counted, never named — by Relations, by Describe when asked for one, and
// as the parent whose primary key an implicit reference resolves to.
func TestInventoryReadable(t *testing.T) {
	path := writeFile(t, inventoryDDL...)
	e, err := Open(context.Background(), path, guard.Policy{Readable: []string{"main.CHILD*", "PARENT", "main.Solo"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rels, cat := inventory(t, e)
	if got := relationNames(rels.Relations); got != "child,child2,child_v,parent,solo" || rels.Unreadable != 9 {
		t.Errorf("relations %s, %d unreadable", got, rels.Unreadable)
	}
	fks := relationNamed(t, cat, "child2").ForeignKeys
	if len(fks) != 4 || fks[0].RefName != "hidden_parent" || len(fks[0].RefColumns) != 0 ||
		!reflect.DeepEqual(fks[3].RefColumns, []string{"a", "b"}) {
		t.Errorf("child2's keys %s", asJSON(fks))
	}
	cat, err = e.Describe(context.Background(), catalogReq, []contracts.Relation{
		{Schema: "main", Name: "hidden_parent", Kind: contracts.RelationTable},
		{Schema: "main", Name: "wr", Kind: contracts.RelationTable},
		{Schema: "main", Name: "solo", Kind: contracts.RelationTable}})
	if err != nil {
		t.Fatal(err)
	}
	if relationNames(cat.Relations) != "solo" || cat.Unreadable != 2 {
		t.Errorf("described %s, %d unreadable", relationNames(cat.Relations), cat.Unreadable)
	}
}

// outcome is how a read ended: its rows, or its refusal code, or its error
// class and message.
func outcome(t *testing.T, e *Engine, q string) string {
	t.Helper()
	res, err := read(t, e, q)
	var (
		ref   *contracts.Refusal
		dbErr *contracts.DBError
	)
	switch {
	case errors.As(err, &ref):
		return "refused " + string(ref.Code)
	case errors.As(err, &dbErr):
		return "error " + string(dbErr.Class) + ": " + dbErr.Message
	case err != nil:
		return "other " + err.Error()
	}
	return fmt.Sprint(res.Rows.Rows)
}

// TestCatalogAuthorizerIsTheEngines: what the inventory's statements may do
// (the metadata pragmas on any relation, sqlite_schema, sqlite_stat1) is
// theirs alone — a model's statements read exactly as before, on every
// pooled connection, after the inventory ran on them.
func TestCatalogAuthorizerIsTheEngines(t *testing.T) {
	path := writeFile(t, append(inventoryDDL, "ANALYZE")...)
	for _, readable := range [][]string{nil, {"main.child", "main.solo"}} {
		e, err := Open(context.Background(), path, guard.Policy{Readable: readable})
		if err != nil {
			t.Fatal(err)
		}
		queries := []string{
			"SELECT name FROM pragma_table_xinfo('child')",
			"SELECT name FROM pragma_table_xinfo('parent')",
			"SELECT * FROM pragma_index_list('child')",
			"SELECT * FROM pragma_index_xinfo('child_x')",
			"SELECT * FROM pragma_foreign_key_list('child')",
			"SELECT s.name, p.name FROM sqlite_schema s, pragma_table_xinfo(s.name) p",
			"SELECT * FROM sqlite_stat1",
			"SELECT name FROM sqlite_schema",
			"SELECT * FROM pragma_table_list",
		}
		before := map[string]string{}
		for _, q := range queries {
			before[q] = outcome(t, e, q)
		}
		if before["SELECT * FROM sqlite_stat1"] != "refused table_not_readable" {
			t.Fatalf("readable %v: sqlite_stat1 read by a model: %s", readable, before["SELECT * FROM sqlite_stat1"])
		}
		if readable != nil && !strings.Contains(before[queries[1]], "permission") {
			t.Fatalf("readable %v: pragma on an unreadable table: %s", readable, before[queries[1]])
		}
		for range MaxConns {
			inventory(t, e)
		}
		// Below the guard: each pooled connection is back under the
		// connection's own authorizer, which denies sqlite_stat1.
		ctx := context.Background()
		conns := make([]*sql.Conn, MaxConns)
		for i := range conns {
			c, err := e.db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns[i] = c
		}
		for i, c := range conns {
			var n int
			if err := c.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_stat1").Scan(&n); authCode(err) != 23 { // SQLITE_AUTH
				t.Errorf("readable %v, connection %d: sqlite_stat1 read below the guard: %v", readable, i, err)
			}
			c.Close()
		}
		for range MaxConns { // every pooled connection in turn
			for _, q := range queries {
				if got := outcome(t, e, q); got != before[q] {
					t.Errorf("readable %v: %s\n before the inventory %s\n after              %s", readable, q, before[q], got)
				}
			}
		}
		e.Close()
	}
}

// TestCatalogAuthorizerDeniesWrites: the catalog statements' authorizer
// alone, on a writable file, denies every write as the connection's does.
func TestCatalogAuthorizerDeniesWrites(t *testing.T) {
	dir := t.TempDir()
	path := fixture(t)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := setAuthorizer(conn, catalogAuthorizer(nil)); err != nil {
		t.Fatal(err)
	}
	defer setAuthorizer(conn, nil)
	before := fileState(t, path)
	for _, w := range layerWrites(dir) {
		if _, err := conn.ExecContext(ctx, w.sql); authCode(err) != 23 { // SQLITE_AUTH
			t.Errorf("%s: %v, want SQLITE_AUTH", w.sql, err)
		}
	}
	if after := fileState(t, path); after != before {
		t.Fatalf("the file changed:\n before %s\n after  %s", before, after)
	}
}

// TestDescribeUndescribable: a view over a dropped table and a virtual table
// whose module this build lacks cannot be described; they keep no columns,
// every other relation is described, and finding them costs a bounded
// number of statements.
func TestDescribeUndescribable(t *testing.T) {
	stmts := append([]string{}, inventoryDDL...)
	stmts = append(stmts, "CREATE TABLE dropped (z)", "CREATE VIEW broken AS SELECT z FROM dropped", "DROP TABLE dropped")
	for i := range 6 {
		stmts = append(stmts, fmt.Sprintf("CREATE VIEW good%d AS SELECT id FROM child", i))
	}
	stmts = append(stmts, "PRAGMA writable_schema = ON",
		"INSERT INTO sqlite_schema (type, name, tbl_name, rootpage, sql) VALUES ('table', 'vec', 'vec', 0, 'CREATE VIRTUAL TABLE vec USING vec0(x)')")
	e := open(t, writeFile(t, stmts...))
	rels, cat := inventory(t, e)
	if relationNames(cat.Relations) != relationNames(rels.Relations) {
		t.Fatalf("described %s, listed %s", relationNames(cat.Relations), relationNames(rels.Relations))
	}
	if k := relationNamed(t, rels, "vec").Kind; k != contracts.RelationVirtualTable {
		t.Errorf("vec is listed as %s", k)
	}
	for _, r := range cat.Relations {
		undescribable := r.Name == "broken" || r.Name == "vec"
		if undescribable != (len(r.Columns) == 0) {
			t.Errorf("%s: columns %s", r.Name, asJSON(r.Columns))
		}
	}
	if cat.Statements <= 4 || cat.Statements > 4+MaxIsolationStatements {
		t.Errorf("%d statements", cat.Statements)
	}

	// More broken views than the bound can isolate: Describe still ends,
	// within it.
	stmts = []string{"CREATE TABLE d (z)"}
	for i := range 80 {
		stmts = append(stmts, fmt.Sprintf("CREATE VIEW v%02d AS SELECT z FROM d", i))
	}
	path := writeFile(t, append(stmts, "DROP TABLE d")...)
	execFile(t, path, "CREATE TABLE keep (k)")
	e = open(t, path)
	_, cat = inventory(t, e)
	if len(cat.Relations) != 81 || cat.Statements > 4+MaxIsolationStatements {
		t.Errorf("%d relations, %d statements", len(cat.Relations), cat.Statements)
	}
}

// TestInventoryScale: a 600-table file with views and foreign keys is
// listed and described whole, in as many statements as a 10-table one.
func TestInventoryScale(t *testing.T) {
	statements := map[int]int{}
	for _, n := range []int{10, 600} {
		path := filepath.Join(t.TempDir(), "many.db")
		if err := sqlitegen.ManyTables(path, n); err != nil {
			t.Fatal(err)
		}
		// The smallest value limit an operation's memory can set: the list
		// of names bound to each statement is longer, and still binds.
		e, err := OpenWith(context.Background(), path, guard.Policy{}, engine.Options{OperationMemory: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		rels, cat := inventory(t, e)
		views := (n + 9) / 10
		if len(rels.Relations) != n+views || len(cat.Relations) != n+views {
			t.Fatalf("%d tables: listed %d, described %d", n, len(rels.Relations), len(cat.Relations))
		}
		last := relationNamed(t, cat, sqlitegen.TableName(n-1))
		if len(last.Columns) != 6 || len(last.ForeignKeys) != 1 || last.ForeignKeys[0].RefName != sqlitegen.TableName(n-2) {
			t.Errorf("%s: %s", last.Name, asJSON(last))
		}
		owner := relationNamed(t, cat, sqlitegen.TableName(1)).ForeignKeys
		if len(owner) != 2 || !reflect.DeepEqual(owner[1].RefColumns, []string{"id"}) {
			t.Errorf("%s's keys: %s", sqlitegen.TableName(1), asJSON(owner))
		}
		if v := relationNamed(t, cat, sqlitegen.ViewName(0)); len(v.Columns) != 3 {
			t.Errorf("%s: %s", v.Name, asJSON(v))
		}
		statements[n] = cat.Statements
	}
	if statements[10] != statements[600] || statements[600] != 4 {
		t.Errorf("statements by size: %v", statements)
	}
}

// TestInventoryDeadline: the request's timeout holds the whole call, and a
// cancelled context ends it as cancelled.
func TestInventoryDeadline(t *testing.T) {
	e := open(t, writeFile(t, inventoryDDL...))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.Relations(ctx, catalogReq)
	wantClass(t, err, contracts.DBCancelled)
	_, err = e.Describe(ctx, catalogReq, []contracts.Relation{{Schema: "main", Name: "child"}})
	wantClass(t, err, contracts.DBCancelled)
}

// TestGuard: the engine's guard reads a statement as Read does, without
// running it, under the connection's policy.
func TestGuard(t *testing.T) {
	path := writeFile(t, inventoryDDL...)
	e, err := Open(context.Background(), path, guard.Policy{Readable: []string{"main.child", "main.parent"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r, p, err := e.Guard(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.Readable, []string{"main.child", "main.parent"}) || p.DefaultSchema != "main" {
		t.Errorf("policy %+v", p)
	}
	st, ref := r.Read("SELECT c.x, p.label FROM child c JOIN parent p ON p.a = c.pa")
	if ref != nil || guard.Apply(st, p) != nil || len(st.Scopes) != 1 || len(st.Scopes[0].Tables) != 2 {
		t.Errorf("a readable join: %+v, %v", st, ref)
	}
	for q, code := range map[string]string{
		"DELETE FROM child":          string(contracts.RefuseNotASelect),
		"SELECT * FROM solo":         string(contracts.RefuseTableNotReadable),
		"SELECT * FROM nowhere":      string(contracts.RefuseUnparsable),
		"SELECT 1; SELECT 2":         string(contracts.RefuseNotOneStatement),
		"SELECT load_extension('x')": string(contracts.RefuseFunctionDenied),
	} {
		if _, ref := r.Read(q); ref == nil || string(ref.Code) != code {
			t.Errorf("%s: %+v, want %s", q, ref, code)
		}
	}
	if n := outcome(t, e, "SELECT count(*) FROM child"); n != "[[5]]" {
		t.Errorf("a read after the guard's compiles: %s", n)
	}
}

func TestIndexExpression(t *testing.T) {
	for _, c := range []struct {
		ddl   string
		seqno int
		want  string
	}{
		{`CREATE INDEX i ON t (x DESC, lower("y") COLLATE NOCASE)`, 1, `lower("y")`},
		{`CREATE INDEX "i (" ON "t(,)" (a, substr(b, 1, 2) ASC, c)`, 1, `substr(b, 1, 2)`},
		{`CREATE INDEX i ON [t)] ("a,b" || 'x,)', coalesce(c, d) desc)`, 0, `"a,b" || 'x,)'`},
		{`CREATE INDEX i ON t (abs(a) collate binary desc)`, 0, `abs(a)`},
		{`CREATE INDEX i ON t (a)`, 3, ``},
		{`not an index`, 0, ``},
	} {
		if got := indexExpression(c.ddl, c.seqno); got != c.want {
			t.Errorf("%s, term %d: %q, want %q", c.ddl, c.seqno, got, c.want)
		}
	}
}
