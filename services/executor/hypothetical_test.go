package executor

import (
	"context"
	"crypto/rand"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/pgtest"
	"github.com/sondehq/sonde/services/executor/connections"
)

// TestExplainHypotheticalUnavailable: on SQLite and DuckDB (real files) an
// explain that names a hypothetical index is refused with its own code and
// what to do instead; nothing reaches the database.
func TestExplainHypotheticalUnavailable(t *testing.T) {
	ctx := context.Background()
	duck := connections.Connection{ID: "shop", Engine: contracts.EngineDuckDB, Path: duckdbFixture(t), Readable: []string{"main.orders"}}
	for _, c := range []struct {
		engine contracts.Engine
		conn   connections.Connection
		sql    string
	}{
		{contracts.EngineSQLite, demoConn(t), "SELECT id FROM orders WHERE status = 'paid'"},
		{contracts.EngineDuckDB, duck, "SELECT id FROM orders WHERE status = 'paid'"},
	} {
		s := newService(t, Config{Engine: c.engine, Connections: []connections.Connection{c.conn}, Artifacts: memStore{}})
		req := contracts.ExecRequest{RunID: "run-h", StepID: "s1", ConnectionID: c.conn.ID, Profile: contracts.ProfileAgentReadOnly,
			SQL: c.sql, TimeoutMs: 5000, HypotheticalIndex: "CREATE INDEX ON orders (status)"}
		r := s.shownExec(ctx, contracts.OpExplain, req)
		if r.Status != contracts.ExecRefused || r.Refusal.Code != contracts.RefuseHypotheticalUnavailable || r.Statements != 0 {
			t.Fatalf("%s: %+v", c.engine, r)
		}
		if !strings.Contains(r.Refusal.Message, "the "+string(c.engine)+" executor cannot plan with a hypothetical index") ||
			!strings.Contains(r.Refusal.Fix, "compare plans of rewrites") || !strings.Contains(r.Text, string(contracts.RefuseHypotheticalUnavailable)) {
			t.Errorf("%s: refusal %+v\n%s", c.engine, r.Refusal, r.Text)
		}
		req.HypotheticalIndex = ""
		if r := s.shownExec(ctx, contracts.OpExplain, req); r.Status != contracts.ExecOK || r.Plan == nil || r.Plan.HypotheticalIndex != "" {
			t.Errorf("%s: a plain plan: %+v", c.engine, r)
		}
	}
}

// TestExplainHypotheticalPostgres: through the service, a PostgreSQL plan
// made with a hypothetical index (hypopg) says so in its summary and its
// text, and reads the index the plain plan lacks.
func TestExplainHypotheticalPostgres(t *testing.T) {
	base := pgtest.URL(t)
	ctx := context.Background()
	root, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close(ctx)
	db := "sonde_hypo_" + strings.ToLower(rand.Text()[:10])
	if _, err := root.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)") })
	u, _ := url.Parse(base)
	u.Path = "/" + db
	dsn := u.String()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE EXTENSION hypopg"); err != nil {
		conn.Close(ctx)
		msg := "hypopg is not installed on the test server (apt-get install postgresql-<major>-hypopg): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	_, err = conn.Exec(ctx, `CREATE TABLE public.items AS SELECT g AS id, g % 5000 AS k FROM generate_series(1, 100000) g;
ANALYZE public.items`)
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}

	s := newService(t, Config{Engine: contracts.EnginePostgres, Artifacts: memStore{}, Connections: []connections.Connection{
		{ID: "pg", Engine: contracts.EnginePostgres, DSN: dsn, Readable: []string{"public.items"}}}})
	req := contracts.ExecRequest{RunID: "run-h", StepID: "s1", ConnectionID: "pg", Profile: contracts.ProfileAgentReadOnly,
		SQL: "SELECT id FROM public.items WHERE k = 42", TimeoutMs: 5000}
	r := s.shownExec(ctx, contracts.OpExplain, req)
	if r.Status != contracts.ExecOK || r.Plan.Access[0].Access != contracts.AccessFullScan || strings.Contains(r.Text, "hypothetical") {
		t.Fatalf("plain plan: %+v\n%s", r.Plan, r.Text)
	}
	req.HypotheticalIndex = "CREATE INDEX items_k ON items (k)"
	r = s.shownExec(ctx, contracts.OpExplain, req)
	if r.Status != contracts.ExecOK || r.Plan.HypotheticalIndex != "CREATE INDEX ON public.items USING btree (k)" ||
		r.Plan.Access[0].Access != contracts.AccessIndex || !strings.HasSuffix(r.Plan.Access[0].Index, ">btree_items_k") {
		t.Fatalf("hypothetical plan: %+v %+v\n%s", r.Plan, r.Refusal, r.Text)
	}
	if !strings.Contains(r.Text, "Planned as if this index existed (hypothetical: nothing was created): CREATE INDEX ON public.items USING btree (k)") ||
		!strings.Contains(r.Text, "the plan uses the hypothetical index "+r.Plan.Access[0].Index) {
		t.Errorf("text:\n%s", r.Text)
	}
	req.HypotheticalIndex = "CREATE INDEX ON public.items (k); DROP TABLE public.items"
	if r := s.shownExec(ctx, contracts.OpExplain, req); r.Status != contracts.ExecRefused || r.Refusal.Code != contracts.RefuseNotOneStatement || r.Statements != 0 {
		t.Errorf("stacked index text: %+v", r)
	}
}
