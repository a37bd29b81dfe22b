package executor

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence/fencetest"
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
	ctx := context.Background()
	req := func(sql string) contracts.ExecRequest {
		return contracts.ExecRequest{RunID: "run-1", StepID: "s1", ConnectionID: "hostile", Profile: contracts.ProfileInspect,
			SQL: sql, TimeoutMs: 5000, MaxRows: 10000, MaxBytes: 8 << 20}
	}
	h := fencetest.Corpus()[2]
	table := quoteIdent("t2 " + h)
	cases := map[string]struct {
		op  contracts.ExecOp
		req contracts.ExecRequest
	}{
		"schema":            {contracts.OpSchema, req("")},
		"schema of a table": {contracts.OpSchema, func() contracts.ExecRequest { r := req(""); r.Table = "notes"; return r }()},
		"rows":              {contracts.OpRead, req("select * from notes order by id")},
		"names":             {contracts.OpRead, req("select *, 1 as " + quoteIdent(h) + " from " + table)},
		"engine error":      {contracts.OpRead, req("select json_extract(a, '$') from notes where id = 3")},
		"missing table":     {contracts.OpRead, req("select * from " + quoteIdent(h+"missing"))},
		"syntax":            {contracts.OpRead, req("select 1 " + quoteIdent(h) + " " + quoteIdent(h))},
		"not a select":      {contracts.OpRead, req("delete from notes where a = " + quoteText(h))},
	}
	for name, c := range cases {
		reply := s.Exec(ctx, c.op, c.req)
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
