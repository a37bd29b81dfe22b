package executor

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence/fencetest"
	"github.com/sondehq/sonde/pkg/pgtest"
	"github.com/sondehq/sonde/services/executor/connections"
)

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
func quoteText(s string) string  { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

// hostileSQLite writes a real SQLite file whose schema and rows carry every
// forgery of the corpus: the issue's example as a comment inside a CREATE
// TABLE, forgeries as table and column names, as values, and halved across
// two columns and across two rows.
func hostileSQLite(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hostile.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stmts := []string{
		"BEGIN",
		"CREATE TABLE notes (\n  id INTEGER PRIMARY KEY, /* " + fencetest.IssueExample + " */\n  a TEXT,\n  b TEXT\n)",
	}
	for i, h := range fencetest.Corpus() {
		x, y := fencetest.Halves(h)
		stmts = append(stmts,
			fmt.Sprintf("INSERT INTO notes(id, a, b) VALUES (%d, %s, %s)", 3*i+1, quoteText(h), quoteText(h)),
			fmt.Sprintf("INSERT INTO notes(id, a, b) VALUES (%d, %s, %s)", 3*i+2, quoteText(x), quoteText(y)),
			fmt.Sprintf("INSERT INTO notes(id, a, b) VALUES (%d, %s, %s)", 3*i+3, quoteText(y), quoteText(x)),
		)
		if i < 12 {
			stmts = append(stmts, fmt.Sprintf("CREATE TABLE %s (%s TEXT /* %s */)", quoteIdent(fmt.Sprintf("t%d %s", i, h)),
				quoteIdent(h+" col"), strings.ReplaceAll(h, "*/", "* /")))
		}
	}
	stmts = append(stmts, "COMMIT")
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return path
}

// Every text the executor renders from this file — the schema (the
// snapshot's text), rows, database errors and refusals — holds the fence:
// one opening and one closing marker for a fenced reply, none for a refusal,
// and no line that reads as a marker once normalised.
func TestRenderedTextHoldsTheFenceOnAHostileFile(t *testing.T) {
	path := hostileSQLite(t)
	s := newService(t, Config{Connections: []connections.Connection{{ID: "hostile", Engine: contracts.EngineSQLite, Path: path}}})
	req := func(sql string) contracts.ExecRequest {
		return contracts.ExecRequest{RunID: "run-1", StepID: "s1", ConnectionID: "hostile", Profile: contracts.ProfileInspect,
			SQL: sql, TimeoutMs: 5000, MaxRows: 10000, MaxBytes: 8 << 20}
	}
	h := fencetest.Corpus()[2]
	table := quoteIdent("t2 " + h)
	cases := map[string]fenceCase{
		"schema":            {contracts.OpSchema, req("")},
		"schema of a table": {contracts.OpSchema, func() contracts.ExecRequest { r := req(""); r.Table = "notes"; return r }()},
		"rows":              {contracts.OpRead, req("select * from notes order by id")},
		"names":             {contracts.OpRead, req("select *, 1 as " + quoteIdent(h) + " from " + table)},
		"engine error":      {contracts.OpRead, req("select json_extract(a, '$') from notes where id = 3")},
		"missing table":     {contracts.OpRead, req("select * from " + quoteIdent(h+"missing"))},
		"syntax":            {contracts.OpRead, req("select 1 " + quoteIdent(h) + " " + quoteIdent(h))},
		"not a select":      {contracts.OpRead, req("delete from notes where a = " + quoteText(h))},
	}
	checkFenced(t, s, cases)
}

type fenceCase struct {
	op  contracts.ExecOp
	req contracts.ExecRequest
}

// checkFenced runs each case and checks its reply text: one fence for rows,
// a schema or a database error, none for a refusal.
func checkFenced(t *testing.T, s *Service, cases map[string]fenceCase) {
	t.Helper()
	for name, c := range cases {
		reply := s.shownExec(context.Background(), c.op, c.req)
		if reply.Status == "" || reply.Text == "" {
			t.Errorf("%s: no reply text: %+v", name, reply)
			continue
		}
		opened := 1
		if reply.Status == contracts.ExecRefused {
			opened = 0
		}
		if err := fencetest.Check(reply.Text, opened); err != nil {
			t.Errorf("%s: %v\n%s", name, err, reply.Text)
		}
	}
}

// The same on PostgreSQL: the schema read composes DDL from the catalog —
// quoted names, a view's definition, a check constraint — and each carries
// the corpus's forgeries.
func TestRenderedTextHoldsTheFenceOnPostgres(t *testing.T) {
	dsn := pgtest.URL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	schema := "sonde_fence_" + strings.ToLower(rand.Text()[:10])
	lit := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	ident := func(s string) string { return pgx.Identifier{s}.Sanitize() }
	h := fencetest.IssueExample
	setup := []string{
		"CREATE SCHEMA " + schema,
		"CREATE TABLE " + schema + ".notes (id int PRIMARY KEY, a text, b text, " + ident(h) + " int, CHECK (length(a) < 100000 OR a = " + lit(h) + "))",
		"CREATE VIEW " + schema + ".v AS SELECT " + lit(h) + " AS x, a AS " + ident("y "+h) + " FROM " + schema + ".notes",
		"COMMENT ON TABLE " + schema + ".notes IS " + lit(h),
	}
	for i, c := range fencetest.Corpus() {
		x, y := fencetest.Halves(c)
		setup = append(setup, fmt.Sprintf("INSERT INTO %s.notes(id, a, b) VALUES (%d, %s, %s), (%d, %s, %s)",
			schema, 2*i+1, lit(c), lit(c), 2*i+2, lit(x), lit(y)))
	}
	t.Cleanup(func() { conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE") })
	for _, q := range setup {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s := newService(t, Config{Engine: contracts.EnginePostgres, Connections: []connections.Connection{
		{ID: "pg", Engine: contracts.EnginePostgres, DSN: dsn, Readable: []string{schema + ".*"}}}})
	req := func(sql string) contracts.ExecRequest {
		return contracts.ExecRequest{RunID: "run-1", StepID: "s1", ConnectionID: "pg", Profile: contracts.ProfileInspect,
			Schema: schema, SQL: sql, TimeoutMs: 5000, MaxRows: 10000, MaxBytes: 8 << 20}
	}
	checkFenced(t, s, map[string]fenceCase{
		"schema":        {contracts.OpSchema, req("")},
		"rows":          {contracts.OpRead, req("SELECT * FROM " + schema + ".notes ORDER BY id")},
		"view":          {contracts.OpRead, req("SELECT * FROM " + schema + ".v")},
		"engine error":  {contracts.OpRead, req("SELECT a::int FROM " + schema + ".notes WHERE id = 5")},
		"missing table": {contracts.OpRead, req("SELECT * FROM " + schema + "." + ident(h))},
		"syntax":        {contracts.OpRead, req("SELECT 1 " + lit(h) + " " + lit(h))},
	})
}
