package postgres

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strconv"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver pgtest.ManyTables connects with
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/pkg/pgtest"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// catalogEngine opens an engine on dsn (as the role dsn names) with the
// readable patterns given.
func catalogEngine(t testing.TB, dsn string, readable ...string) *Engine {
	t.Helper()
	e, err := New(context.Background(), connections.Connection{
		ID: "pg-inventory", Engine: contracts.EnginePostgres, DSN: dsn, Readable: readable,
	}, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func catalogReq() engine.Request {
	return engine.Request{Profile: contracts.ProfileInspect, Timeout: 30 * time.Second}
}

// names lists "schema.name kind" for each relation.
func names(rels []contracts.Relation) []string {
	out := make([]string, len(rels))
	for i, r := range rels {
		out[i] = r.QualifiedName() + " " + string(r.Kind) + " " + r.EngineKind
	}
	return out
}

func relationsOf(t *testing.T, e *Engine) engine.Catalog {
	t.Helper()
	cat, err := e.Relations(context.Background(), catalogReq())
	if err != nil {
		t.Fatalf("Relations: %v", err)
	}
	if cat.Statements != 1 || len(cat.SQL) != 1 || cat.SQL[0] != RelationsSQL {
		t.Fatalf("Relations sent %d statements %q, want RelationsSQL alone", cat.Statements, cat.SQL)
	}
	return cat
}

func describe(t *testing.T, e *Engine, rels ...contracts.Relation) engine.Catalog {
	t.Helper()
	cat, err := e.Describe(context.Background(), catalogReq(), rels)
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}
	if cat.Statements != 1 || len(cat.SQL) != 1 || cat.SQL[0] != DescribeSQL {
		t.Fatalf("Describe sent %d statements %q, want DescribeSQL alone", cat.Statements, cat.SQL)
	}
	if cat.StatisticsSource != StatisticsSource {
		t.Errorf("StatisticsSource %q", cat.StatisticsSource)
	}
	return cat
}

func rel(schema, name string) contracts.Relation {
	return contracts.Relation{Schema: schema, Name: name}
}

// TestRelationsKinds: every kind a statement reads is listed with its kind
// and relkind — a table, a partitioned table and its partition, a view, a
// materialized view and a foreign table (a wrapper with no handler needs no
// extension) — while sequences, indexes and composite types never are.
// Relations outside the readable patterns are counted, not named.
func TestRelationsKinds(t *testing.T) {
	s := testServer(t)
	mustExec(t, s.admin, `
CREATE SCHEMA inv;
CREATE TABLE inv.plain (id int PRIMARY KEY, v text);
CREATE INDEX plain_v ON inv.plain (v);
CREATE TABLE inv.parted (id int, d date) PARTITION BY RANGE (d);
CREATE TABLE inv.parted_2024 PARTITION OF inv.parted FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
CREATE VIEW inv.v AS SELECT id FROM inv.plain;
CREATE MATERIALIZED VIEW inv.mv AS SELECT id FROM inv.plain;
CREATE FOREIGN DATA WRAPPER inv_fdw;
CREATE SERVER inv_srv FOREIGN DATA WRAPPER inv_fdw;
CREATE FOREIGN TABLE inv.ft (id int NOT NULL, label text) SERVER inv_srv;
CREATE SEQUENCE inv.seq;
CREATE TYPE inv.pair AS (a int, b int);
CREATE TEMPORARY TABLE tmp_rel (id int);`)
	e := catalogEngine(t, s.ownerDSN, "inv.*")
	cat := relationsOf(t, e)
	want := []string{
		"inv.ft foreign table f",
		"inv.mv materialized view m",
		"inv.parted partitioned table p",
		"inv.parted_2024 table r",
		"inv.plain table r",
		"inv.v view v",
	}
	if got := names(cat.Relations); !reflect.DeepEqual(got, want) {
		t.Fatalf("relations\n got  %q\n want %q", got, want)
	}
	// public.customers, orders, events and secret.keys.
	if cat.Unreadable != 4 {
		t.Errorf("Unreadable = %d, want 4", cat.Unreadable)
	}
	for _, r := range cat.Relations {
		if r.Columns != nil || r.Stats != nil {
			t.Errorf("Relations described %s: %+v", r.QualifiedName(), r)
		}
	}
	// Describe keeps the kinds, and reads a foreign table's columns.
	d := describe(t, e, cat.Relations...)
	if got := names(d.Relations); !reflect.DeepEqual(got, want) {
		t.Fatalf("described\n got  %q\n want %q", got, want)
	}
	ft := d.Relations[0]
	wantCols := []contracts.RelationColumn{{Name: "id", Type: "integer"}, {Name: "label", Type: "text", Nullable: true}}
	if !reflect.DeepEqual(ft.Columns, wantCols) || ft.Stats != nil {
		t.Errorf("foreign table described as %+v", ft)
	}
	// A sequence, an index and a composite type are not relations, even
	// when asked for by name.
	if d := describe(t, e, rel("inv", "seq"), rel("inv", "plain_v"), rel("inv", "pair"), rel("inv", "plain")); len(d.Relations) != 1 {
		t.Errorf("Describe of a sequence, an index and a type: %q", names(d.Relations))
	}
}

// TestDescribeStructure reads columns, keys, foreign keys and indexes
// exactly: constraint column order, mixed-case names, dropped columns,
// expression and INCLUDE columns, and a foreign key to a partitioned
// table (stored once more per partition of the referenced table). The
// order asked for is kept; what is gone, not a relation or not readable is
// left out.
func TestDescribeStructure(t *testing.T) {
	s := testServer(t)
	mustExec(t, s.admin, `
CREATE SCHEMA inv;
CREATE TABLE inv.parent (a int, b text, PRIMARY KEY (b, a));
CREATE TABLE inv.child (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  "Mixed Case" varchar(20) NOT NULL,
  pa int,
  pb text,
  note text,
  amount numeric(10,2),
  UNIQUE ("Mixed Case"),
  UNIQUE (pa, note),
  CONSTRAINT child_parent_fk FOREIGN KEY (pb, pa) REFERENCES inv.parent (b, a)
);
ALTER TABLE inv.child DROP COLUMN amount;
ALTER TABLE inv.child ADD COLUMN tags text[];
CREATE INDEX child_expr ON inv.child (lower(note), pa) INCLUDE (pb);
CREATE UNIQUE INDEX child_partial ON inv.child (note) WHERE note IS NOT NULL;
CREATE TABLE inv.pk_parted (id int, d date, PRIMARY KEY (id, d)) PARTITION BY RANGE (d);
CREATE TABLE inv.pk_parted_1 PARTITION OF inv.pk_parted FOR VALUES FROM ('2024-01-01') TO ('2024-07-01');
CREATE TABLE inv.pk_parted_2 PARTITION OF inv.pk_parted FOR VALUES FROM ('2024-07-01') TO ('2025-01-01');
CREATE TABLE inv.refs (id int, d date, CONSTRAINT refs_fk FOREIGN KEY (id, d) REFERENCES inv.pk_parted (id, d));
CREATE VIEW inv.child_v AS SELECT id, note FROM inv.child;`)
	e := catalogEngine(t, s.ownerDSN, "inv.*")
	cat := describe(t, e, rel("inv", "child"), rel("inv", "parent"), rel("inv", "gone"), rel("secret", "keys"),
		rel("inv", "child"), rel("inv", "refs"), rel("inv", "child_v"))
	if got := names(cat.Relations); !reflect.DeepEqual(got, []string{"inv.child table r", "inv.parent table r",
		"inv.refs table r", "inv.child_v view v"}) {
		t.Fatalf("described %q", got)
	}
	if cat.Unreadable != 1 {
		t.Errorf("Unreadable = %d, want 1 (secret.keys)", cat.Unreadable)
	}
	child := cat.Relations[0]
	child.Stats = nil
	want := contracts.Relation{
		Schema: "inv", Name: "child", Kind: contracts.RelationTable, EngineKind: "r",
		Columns: []contracts.RelationColumn{
			{Name: "id", Type: "bigint"},
			{Name: "Mixed Case", Type: "character varying(20)"},
			{Name: "pa", Type: "integer", Nullable: true},
			{Name: "pb", Type: "text", Nullable: true},
			{Name: "note", Type: "text", Nullable: true},
			{Name: "tags", Type: "text[]", Nullable: true},
		},
		PrimaryKey: []string{"id"},
		Unique:     [][]string{{"Mixed Case"}, {"pa", "note"}},
		ForeignKeys: []contracts.ForeignKey{{Name: "child_parent_fk", Columns: []string{"pb", "pa"},
			RefSchema: "inv", RefName: "parent", RefColumns: []string{"b", "a"}}},
		Indexes: []contracts.Index{
			{Name: "child_Mixed Case_key", Unique: true, Columns: []string{"Mixed Case"}},
			{Name: "child_expr", Columns: []string{"lower(note)", "pa"}},
			{Name: "child_pa_note_key", Unique: true, Columns: []string{"pa", "note"}},
			{Name: "child_partial", Unique: true, Columns: []string{"note"}},
			{Name: "child_pkey", Unique: true, Columns: []string{"id"}},
		},
	}
	if !reflect.DeepEqual(child, want) {
		t.Errorf("inv.child\n got  %+v\n want %+v", child, want)
	}
	parent := cat.Relations[1]
	if !reflect.DeepEqual(parent.PrimaryKey, []string{"b", "a"}) || parent.ForeignKeys != nil || parent.Unique != nil {
		t.Errorf("inv.parent: %+v", parent)
	}
	refs := cat.Relations[2]
	wantFK := []contracts.ForeignKey{{Name: "refs_fk", Columns: []string{"id", "d"}, RefSchema: "inv", RefName: "pk_parted",
		RefColumns: []string{"id", "d"}}}
	if !reflect.DeepEqual(refs.ForeignKeys, wantFK) || refs.PrimaryKey != nil || refs.Indexes != nil {
		t.Errorf("inv.refs foreign keys %+v, want %+v", refs.ForeignKeys, wantFK)
	}
	view := cat.Relations[3]
	if len(view.Columns) != 2 || view.Columns[0] != (contracts.RelationColumn{Name: "id", Type: "bigint", Nullable: true}) ||
		view.Stats != nil || view.Indexes != nil {
		t.Errorf("inv.child_v: %+v", view)
	}
	// Nothing readable: nothing sent.
	none, err := e.Describe(context.Background(), catalogReq(), []contracts.Relation{rel("secret", "keys")})
	if err != nil || none.Statements != 0 || len(none.Relations) != 0 || none.Unreadable != 1 {
		t.Errorf("Describe of an unreadable table alone: %+v %v", none, err)
	}
}

// TestDescribeStatistics: an analysed table has its row estimate and, per
// column, the null fraction and the distinct count, with PostgreSQL's
// negative n_distinct (a fraction of the rows) converted to a count; a
// table never analysed, and a view, have no statistics; an analysed empty
// table has zero rows. pg_stats shows only the columns the role may read.
func TestDescribeStatistics(t *testing.T) {
	s := testServer(t)
	mustExec(t, s.admin, `
CREATE SCHEMA inv;
CREATE TABLE inv.stats (id int, grp int, half int, maybe text);
INSERT INTO inv.stats SELECT i, i % 7, i / 2, CASE WHEN i % 4 = 0 THEN 'x' END FROM generate_series(1, 10000) i;
ANALYZE inv.stats;
CREATE TABLE inv.never (id int) WITH (autovacuum_enabled = false);
INSERT INTO inv.never SELECT generate_series(1, 100);
CREATE TABLE inv.empty (id int) WITH (autovacuum_enabled = false);
ANALYZE inv.empty;
CREATE VIEW inv.v AS SELECT id FROM inv.stats;
CREATE TABLE inv.parted (id int, d date) PARTITION BY RANGE (d);
CREATE TABLE inv.parted_1 PARTITION OF inv.parted FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
INSERT INTO inv.parted SELECT i, date '2024-01-01' + i % 300 FROM generate_series(1, 3000) i;
ANALYZE inv.parted;`)
	// The conversion below is exercised only if PostgreSQL stored these
	// negative.
	var nd float64
	if err := s.admin.QueryRow(context.Background(),
		`SELECT n_distinct FROM pg_stats WHERE schemaname = 'inv' AND tablename = 'stats' AND attname = 'half'`).Scan(&nd); err != nil || nd >= 0 {
		t.Fatalf("pg_stats n_distinct of inv.stats.half = %v (%v), want negative", nd, err)
	}

	e := catalogEngine(t, s.ownerDSN, "inv.*")
	cat := describe(t, e, rel("inv", "stats"), rel("inv", "never"), rel("inv", "empty"), rel("inv", "v"), rel("inv", "parted"))
	if len(cat.Relations) != 5 {
		t.Fatalf("described %q", names(cat.Relations))
	}
	st := cat.Relations[0].Stats
	if st == nil || st.Rows != 10000 {
		t.Fatalf("inv.stats statistics %+v, want 10000 rows", st)
	}
	near := func(p *float64, want, tol float64) bool { return p != nil && math.Abs(*p-want) <= tol }
	for col, w := range map[string]struct{ null, distinct float64 }{
		"id":    {0, 10000}, // n_distinct -1
		"grp":   {0, 7},     // n_distinct 7
		"half":  {0, 5001},  // n_distinct about -0.5001
		"maybe": {0.75, 1},
	} {
		c, ok := st.Columns[col]
		if !ok || !near(c.NullFraction, w.null, 0.001) || !near(c.Distinct, w.distinct, 1) {
			t.Errorf("inv.stats.%s: null %v distinct %v, want %v", col, deref(c.NullFraction), deref(c.Distinct), w)
		}
	}
	if st := cat.Relations[1].Stats; st != nil {
		t.Errorf("never-analysed inv.never has statistics %+v", st)
	}
	if st := cat.Relations[2].Stats; st == nil || st.Rows != 0 {
		t.Errorf("analysed empty inv.empty: %+v, want 0 rows", st)
	}
	if st := cat.Relations[3].Stats; st != nil {
		t.Errorf("view inv.v has statistics %+v", st)
	}
	if st := cat.Relations[4].Stats; st == nil || st.Rows != 3000 || !near(st.Columns["d"].Distinct, 300, 1) {
		t.Errorf("partitioned inv.parted: %+v, want 3000 rows and 300 distinct d", st)
	}

	// As a role that may read the column id of inv.stats alone: the row
	// estimate and every column's name are in pg_class and pg_attribute,
	// the column statistics only for id.
	mustExec(t, s.admin, "GRANT USAGE ON SCHEMA inv TO "+s.agentRole+"; GRANT SELECT (id) ON inv.stats TO "+s.agentRole)
	agent := catalogEngine(t, s.agentDSN, "inv.*")
	cat = describe(t, agent, rel("inv", "stats"))
	if len(cat.Relations) != 1 || cat.Relations[0].Stats == nil || len(cat.Relations[0].Columns) != 4 {
		t.Fatalf("as the agent: %+v", cat.Relations)
	}
	if st := cat.Relations[0].Stats; st.Rows != 10000 || len(st.Columns) != 1 || !near(st.Columns["id"].Distinct, 10000, 1) {
		t.Errorf("as the agent, statistics %+v, want 10000 rows and id alone", st)
	}
}

// TestRelationStatsRule covers what a server older than 14 stores: a
// relation never counted has reltuples 0 and no VACUUM or ANALYZE on
// record, and then has no statistics.
func TestRelationStatsRule(t *testing.T) {
	for _, c := range []struct {
		reltuples float64
		counted   bool
		want      *contracts.RelationStats
	}{
		{-1, false, nil},
		{-1, true, nil},
		{0, false, nil},
		{0, true, &contracts.RelationStats{Rows: 0}},
		{20, false, &contracts.RelationStats{Rows: 20}},
	} {
		if got := relationStats(c.reltuples, c.counted); !reflect.DeepEqual(got, c.want) {
			t.Errorf("relationStats(%v, %v) = %+v, want %+v", c.reltuples, c.counted, got, c.want)
		}
	}
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		nd   *float64
		want any
	}{{nil, nil}, {f(0), nil}, {f(7), 7.0}, {f(-1), 200.0}, {f(-0.25), 50.0}} {
		if got := deref(distinct(c.nd, 200)); got != c.want {
			t.Errorf("distinct(%v, 200) = %v, want %v", deref(c.nd), got, c.want)
		}
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestInventoryReadableExactNames: the readable patterns decide by
// PostgreSQL's name rules, as the guard does: public.genre (unquoted, so
// folded) is the table genre and not "Genre", and a quoted pattern names
// "Genre" alone. What is left out is counted, never named, in both
// Relations and Describe.
func TestInventoryReadableExactNames(t *testing.T) {
	s := testServer(t)
	mustExec(t, s.admin, `CREATE TABLE public."Genre" (id int); CREATE TABLE public.genre (id int, name text)`)
	// Byte order of the names as stored: "Genre" before "customers".
	all := relationsOf(t, catalogEngine(t, s.ownerDSN, "public.*"))
	if got, want := names(all.Relations), []string{"public.Genre table r", "public.customers table r", "public.events table r",
		"public.genre table r", "public.orders table r"}; !reflect.DeepEqual(got, want) {
		t.Errorf("readable public.*: %q, want %q", got, want)
	}
	for _, c := range []struct {
		pattern, want string
	}{
		{"public.genre", "public.genre"},
		{"public.GENRE", "public.genre"},
		{`public."Genre"`, "public.Genre"},
	} {
		e := catalogEngine(t, s.ownerDSN, c.pattern)
		cat := relationsOf(t, e)
		if len(cat.Relations) != 1 || cat.Relations[0].QualifiedName() != c.want || cat.Unreadable != 5 {
			t.Errorf("readable %s: %q, %d unreadable; want %s and 5", c.pattern, names(cat.Relations), cat.Unreadable, c.want)
		}
		d := describe(t, e, rel("public", "Genre"), rel("public", "genre"))
		if len(d.Relations) != 1 || d.Relations[0].QualifiedName() != c.want || d.Unreadable != 1 {
			t.Errorf("readable %s: described %q, %d unreadable", c.pattern, names(d.Relations), d.Unreadable)
		}
	}
}

// TestGuard hands out the reader and policy Read applies.
func TestGuard(t *testing.T) {
	s := testServer(t)
	e := s.engine(t)
	r, p, err := e.Guard(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st, ref := r.Read("SELECT k FROM secret.keys")
	if ref == nil {
		ref = guard.Apply(st, p)
	}
	if ref == nil || ref.Code != contracts.RefuseTableNotReadable {
		t.Fatalf("secret.keys through Guard: %+v, want table_not_readable", ref)
	}
	st, ref = r.Read("SELECT amount FROM orders")
	if ref == nil {
		ref = guard.Apply(st, p)
	}
	if ref != nil {
		t.Fatalf("orders through Guard: %+v", ref)
	}
}

// TestInventoryManyTables: on a generated schema of 2,000 tables (with
// views, a materialized view, foreign keys across two schemas, a third of
// the tables analysed), Relations lists every relation and Describe reads
// all of them in as many statements as it reads ten.
func TestInventoryManyTables(t *testing.T) {
	base := pgtest.URL(t)
	if testing.Short() {
		t.Skip("generates 2,000 tables")
	}
	ctx := context.Background()
	const n = 2000
	dsn := pgtest.ManyTables(ctx, t, base, n)
	e := catalogEngine(t, dsn, "*.*")
	cat := relationsOf(t, e)
	if len(cat.Relations) != pgtest.ManyTablesRelations(n) || cat.Unreadable != 0 {
		t.Fatalf("Relations: %d relations, %d unreadable; want %d", len(cat.Relations), cat.Unreadable, pgtest.ManyTablesRelations(n))
	}
	all := describe(t, e, cat.Relations...)
	few := describe(t, e, cat.Relations[:10]...)
	if all.Statements != few.Statements || len(all.Relations) != len(cat.Relations) || len(few.Relations) != 10 {
		t.Fatalf("Describe: %d relations in %d statements, 10 in %d", len(all.Relations), all.Statements, few.Statements)
	}
	by := map[string]contracts.Relation{}
	for _, r := range all.Relations {
		by[r.QualifiedName()] = r
	}
	// t_00003: analysed, 20 rows, half its amounts NULL; its parent t_00001.
	t3 := by["public.t_00003"]
	if t3.Stats == nil || t3.Stats.Rows != 20 || *t3.Stats.Columns["amount"].NullFraction != 0.5 ||
		*t3.Stats.Columns["code"].Distinct != 20 {
		t.Errorf("public.t_00003 statistics %+v", t3.Stats)
	}
	if len(t3.ForeignKeys) != 1 || t3.ForeignKeys[0].RefSchema != "public" || t3.ForeignKeys[0].RefName != "t_00001" {
		t.Errorf("public.t_00003 foreign keys %+v", t3.ForeignKeys)
	}
	// t_00004 (sales): never analysed, references sales.t_00002.
	t4 := by["sales.t_00004"]
	if t4.Stats != nil || len(t4.ForeignKeys) != 1 || t4.ForeignKeys[0].RefSchema+"."+t4.ForeignKeys[0].RefName != "sales.t_00002" ||
		len(t4.Columns) != 5 || !reflect.DeepEqual(t4.PrimaryKey, []string{"id"}) || !reflect.DeepEqual(t4.Unique, [][]string{{"code"}}) {
		t.Errorf("sales.t_00004: %+v", t4)
	}
	if ix := by["public.t_00005"].Indexes; len(ix) != 3 || ix[0].Name != "t_00005_code_key" || ix[1].Name != "t_00005_created_at" {
		t.Errorf("public.t_00005 indexes %+v", ix)
	}
	if v := by["sales.v_00010"]; v.Kind != contracts.RelationView || len(v.Columns) != 3 {
		t.Errorf("sales.v_00010: %+v", v)
	}
	if mv := by["public.mv_totals"]; mv.Kind != contracts.RelationMaterializedView {
		t.Errorf("public.mv_totals: %+v", mv)
	}
	// Readable patterns on the same schema: public (1,000 tables and the
	// materialized view) is counted, not listed.
	sales := relationsOf(t, catalogEngine(t, dsn, "sales.*"))
	if len(sales.Relations) != n/2+n/10 || sales.Unreadable != n/2+1 {
		t.Errorf("readable sales.*: %d relations, %d unreadable", len(sales.Relations), sales.Unreadable)
	}
}

// TestCatalogCancelClassified: a catalog read fails as Read does.
func TestCatalogCancelClassified(t *testing.T) {
	s := testServer(t)
	e := s.engine(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.Relations(ctx, catalogReq())
	var d *contracts.DBError
	if !errors.As(err, &d) || d.Class != contracts.DBCancelled {
		t.Fatalf("Relations on a cancelled context: %v, want cancelled", err)
	}
}

// BenchmarkInventory times a capture — Relations, then Describe of every
// relation — on generated schemas of 100, 1,000 and 5,000 tables
// (pgtest.ManyTablesScript), reporting the relations and statements of
// each capture and the time spent at the database (the statements' own
// Duration) beside the whole operation's.
func BenchmarkInventory(b *testing.B) {
	base := pgtest.URL(b)
	for _, n := range []int{100, 1000, 5000} {
		b.Run(strconv.Itoa(n)+"-tables", func(b *testing.B) {
			ctx := context.Background()
			dsn := pgtest.ManyTables(ctx, b, base, n)
			e := catalogEngine(b, dsn, "*.*")
			var (
				rels, statements, runs int
				atDB                   time.Duration
			)
			for b.Loop() {
				cat, err := e.Relations(ctx, catalogReq())
				if err != nil {
					b.Fatal(err)
				}
				d, err := e.Describe(ctx, catalogReq(), cat.Relations)
				if err != nil {
					b.Fatal(err)
				}
				rels, statements = len(d.Relations), cat.Statements+d.Statements
				atDB += cat.Duration + d.Duration
				runs++
			}
			if rels != pgtest.ManyTablesRelations(n) {
				b.Fatalf("described %d relations, want %d", rels, pgtest.ManyTablesRelations(n))
			}
			b.ReportMetric(float64(rels), "relations")
			b.ReportMetric(float64(statements), "statements")
			b.ReportMetric(float64(atDB.Milliseconds())/float64(runs), "ms-at-db/op")
		})
	}
}
