package postgres

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard/postgres/postgrestest"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// withHypopg installs hypopg in the fixture database as its superuser owner
// and grants the agent role the two functions the engine calls, as
// docs/executor-postgres.md says (after the agent script revoked EXECUTE on
// public's functions). Without hypopg on the server the test skips — and
// fails under CI, which must exercise it.
func withHypopg(t *testing.T, s *server) {
	t.Helper()
	if _, err := s.admin.Exec(context.Background(), "CREATE EXTENSION IF NOT EXISTS hypopg"); err != nil {
		msg := "hypopg is not installed on the test server (apt-get install postgresql-<major>-hypopg; scripts/postgres.sh installs it as root): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	mustExec(t, s.admin, strings.ReplaceAll(`
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA public FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.hypopg_create_index(text), public.hypopg_reset() TO sonde_agent;`, "sonde_agent", s.agentRole))
}

// manyOrders grows public.orders so that the planner prefers an index on
// amount (about 20 of 100,500 rows share a value) to reading the table.
func manyOrders(t *testing.T, s *server) {
	t.Helper()
	mustExec(t, s.admin, `INSERT INTO public.orders (customer_id, amount, created_at)
SELECT 1 + i % 20, (i % 5000) + 0.25, now() - i * interval '1 minute' FROM generate_series(1, 100000) i;
ANALYZE public.orders;`)
}

func hypoReq(sql, index string) engine.Request {
	r := req(sql, contracts.ProfileAgentReadOnly)
	r.HypotheticalIndex = index
	return r
}

// indexCount counts the real indexes of public.orders.
func indexCount(t *testing.T, s *server) int {
	t.Helper()
	var n int
	if err := s.admin.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_catalog.pg_index WHERE indrelid = 'public.orders'::regclass").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPlanHypotheticalIndex: a statement that reads the whole table is
// planned, as the agent's read-only role inside BEGIN READ ONLY, as if an
// index existed — the plan reads it, by hypopg's name — and nothing was
// created: no index, no row changed, and no hypothetical index left on the
// pooled connection for a later plain plan to use.
func TestPlanHypotheticalIndex(t *testing.T) {
	s := testServer(t)
	withHypopg(t, s)
	manyOrders(t, s)
	e := s.engine(t)
	ctx := context.Background()
	const q = "SELECT id FROM public.orders WHERE amount = 42.25"
	before, indexes := s.state(t), indexCount(t, s)

	_, sum := plan(t, e, q)
	if a, ok := accessOf(sum, "orders"); !ok || a.Access != contracts.AccessFullScan || sum.HypotheticalIndex != "" {
		t.Fatalf("without the index: %+v", sum)
	}

	res, hsum, err := e.PlanHypothetical(ctx, hypoReq(q, "create index orders_amount on orders (amount)"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Statements != 1 || !strings.HasPrefix(res.SQL, explainPrefix) || res.Fingerprint == "" {
		t.Errorf("result: statements %d, SQL %q, fingerprint %q", res.Statements, res.SQL, res.Fingerprint)
	}
	if hsum.HypotheticalIndex != "CREATE INDEX ON public.orders USING btree (amount)" {
		t.Errorf("HypotheticalIndex %q", hsum.HypotheticalIndex)
	}
	a, ok := accessOf(hsum, "orders")
	if !ok || a.Access != contracts.AccessIndex || !strings.HasPrefix(a.Index, "<") || !strings.HasSuffix(a.Index, ">btree_orders_amount") {
		t.Fatalf("with the hypothetical index: %+v", hsum)
	}
	if !strings.Contains(hsum.Note, "the plan uses the hypothetical index "+a.Index) {
		t.Errorf("note %q", hsum.Note)
	}
	if hsum.Cost == nil || sum.Cost == nil || *hsum.Cost >= *sum.Cost {
		t.Errorf("cost with the index %v, without %v", hsum.Cost, sum.Cost)
	}

	// An index the plan does not use is said not to be.
	_, nsum, err := e.PlanHypothetical(ctx, hypoReq(q, "CREATE INDEX ON public.orders (customer_id)"))
	if err != nil || !strings.Contains(nsum.Note, "does not use the hypothetical index") {
		t.Errorf("unused index: %+v, %v", nsum, err)
	}

	// The connection that planned went back to the pool without the index.
	mustExec(t, s.admin, "GRANT SELECT ON public.hypopg_list_indexes TO "+s.agentRole+"; GRANT EXECUTE ON FUNCTION public.hypopg() TO "+s.agentRole)
	conns := e.pool.AcquireAllIdle(ctx)
	if len(conns) == 0 {
		t.Fatal("no idle connection: the planning connection was not pooled")
	}
	for _, c := range conns {
		var n int
		err := c.Conn().QueryRow(ctx, "SELECT count(*) FROM public.hypopg_list_indexes").Scan(&n)
		c.Release()
		if err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("a pooled connection holds %d hypothetical indexes", n)
		}
	}
	for range MaxConns + 1 {
		if _, sum := plan(t, e, q); sum.Access[0].Access != contracts.AccessFullScan {
			t.Fatalf("a later plain plan reads an index: %+v", sum)
		}
	}
	if after := s.state(t); after != before || indexCount(t, s) != indexes {
		t.Fatalf("the database changed:\n before %s\n after  %s", before, after)
	}
}

// TestPlanHypotheticalHostile: every hostile index text is refused before
// anything is sent, and the database does not change; a predicate calling
// a user-defined function that shadows an allowed one is refused by the
// catalog check inside the transaction.
func TestPlanHypotheticalHostile(t *testing.T) {
	s := testServer(t)
	withHypopg(t, s)
	e := s.engine(t)
	ctx := context.Background()
	before := s.state(t)
	const q = "SELECT id FROM public.orders WHERE amount = 42.25"
	for _, c := range postgrestest.HostileIndexes {
		res, _, err := e.PlanHypothetical(ctx, hypoReq(q, c.SQL))
		if !isRefusal(err, c.Code) {
			t.Errorf("%s: gave %v, want refusal %s", c.Name, err, c.Code)
		}
		if res.Statements != 0 {
			t.Errorf("%s: %d statements sent", c.Name, res.Statements)
		}
	}
	// The planned statement is guarded as a read.
	if _, _, err := e.PlanHypothetical(ctx, hypoReq("DELETE FROM public.orders", "CREATE INDEX ON public.orders (amount)")); !isRefusal(err, contracts.RefuseNotASelect) {
		t.Errorf("a DELETE was planned: %v", err)
	}
	if _, _, err := e.PlanHypothetical(ctx, hypoReq("SELECT * FROM public.events", "CREATE INDEX ON public.events (event_date)")); !isRefusal(err, contracts.RefuseLargeTableUnbounded) {
		t.Errorf("an unbounded large table was planned: %v", err)
	}
	mustExec(t, s.admin, "CREATE FUNCTION public.abs(numeric) RETURNS numeric LANGUAGE sql AS 'SELECT 1::numeric'")
	if _, _, err := e.PlanHypothetical(ctx, hypoReq(q, "CREATE INDEX ON public.orders (amount) WHERE abs(amount) > 1")); !isRefusal(err, contracts.RefuseFunctionDenied) {
		t.Errorf("a user-defined function in the predicate: %v", err)
	}
	mustExec(t, s.admin, "DROP FUNCTION public.abs(numeric)")
	if after := s.state(t); after != before {
		t.Fatalf("the database changed:\n before %s\n after  %s", before, after)
	}
}

// TestPlanHypotheticalUnavailable: without hypopg in the database, or with
// it but no EXECUTE for the agent role, the plan is refused as unavailable
// with what the operator can do.
func TestPlanHypotheticalUnavailable(t *testing.T) {
	s := testServer(t)
	e := s.engine(t)
	ctx := context.Background()
	const q = "SELECT id FROM public.orders WHERE amount = 42.25"
	_, _, err := e.PlanHypothetical(ctx, hypoReq(q, "CREATE INDEX ON public.orders (amount)"))
	if !isRefusal(err, contracts.RefuseHypotheticalUnavailable) || !strings.Contains(err.(*contracts.Refusal).Fix, "CREATE EXTENSION hypopg") {
		t.Fatalf("without hypopg: %v", err)
	}
	withHypopg(t, s)
	mustExec(t, s.admin, "REVOKE EXECUTE ON FUNCTION public.hypopg_create_index(text) FROM "+s.agentRole)
	if _, _, err := e.PlanHypothetical(ctx, hypoReq(q, "CREATE INDEX ON public.orders (amount)")); !isRefusal(err, contracts.RefuseHypotheticalUnavailable) {
		t.Fatalf("without EXECUTE: %v", err)
	}
}

// TestHypopgInReadOnlyTransaction pins what PlanHypothetical relies on, on
// a bare connection as the agent role: hypopg creates and plans with a
// hypothetical index inside BEGIN READ ONLY, and the index survives both
// ROLLBACK and DISCARD ALL — only hypopg_reset removes it, which is why
// the engine resets after every call or closes the connection.
func TestHypopgInReadOnlyTransaction(t *testing.T) {
	s := testServer(t)
	withHypopg(t, s)
	manyOrders(t, s)
	mustExec(t, s.admin, "GRANT SELECT ON public.hypopg_list_indexes TO "+s.agentRole+"; GRANT EXECUTE ON FUNCTION public.hypopg() TO "+s.agentRole)
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(s.agentDSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeDescribeExec // nothing cached for DISCARD ALL to drop
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	count := func() int {
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM public.hypopg_list_indexes").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	tx, err := c.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	var ro, name, plan string
	if err := tx.QueryRow(ctx, "SELECT current_setting('transaction_read_only')").Scan(&ro); err != nil || ro != "on" {
		t.Fatalf("transaction_read_only %q, %v", ro, err)
	}
	if err := tx.QueryRow(ctx, "SELECT indexname FROM public.hypopg_create_index('CREATE INDEX ON public.orders (amount)')").Scan(&name); err != nil {
		t.Fatalf("hypopg_create_index inside BEGIN READ ONLY: %v", err)
	}
	if err := tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) SELECT id FROM public.orders WHERE amount = 42.25").Scan(&plan); err != nil || !strings.Contains(plan, name) {
		t.Fatalf("the plan does not read %s: %v\n%s", name, err, plan)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("after ROLLBACK: %d hypothetical indexes, want 1 (hypopg's state is the session's)", n)
	}
	if _, err := c.Exec(ctx, "DISCARD ALL"); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("after DISCARD ALL: %d hypothetical indexes, want 1", n)
	}
	if _, err := c.Exec(ctx, "SELECT public.hypopg_reset()"); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Fatalf("after hypopg_reset: %d", n)
	}
}
