package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard/postgres/postgrestest"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

func plan(t *testing.T, e *Engine, q string) (engine.Result, contracts.PlanSummary) {
	t.Helper()
	res, sum, err := e.Plan(context.Background(), req(q, contracts.ProfileAgentReadOnly))
	if err != nil {
		t.Fatalf("Plan(%q): %v", q, err)
	}
	if res.Statements != 1 || !strings.HasPrefix(res.SQL, "EXPLAIN (FORMAT JSON) ") || res.Fingerprint == "" {
		t.Fatalf("Plan(%q): statements %d, SQL %q, fingerprint %q", q, res.Statements, res.SQL, res.Fingerprint)
	}
	if res.Rows == nil || len(res.Rows.Rows) != 1 || res.Rows.Columns[0].Name != "QUERY PLAN" {
		t.Fatalf("Plan(%q): rows %+v, want one QUERY PLAN row", q, res.Rows)
	}
	if sum.Engine != contracts.EnginePostgres || sum.Cost == nil || sum.Rows == nil {
		t.Fatalf("Plan(%q): summary %+v, want PostgreSQL's cost and rows", q, sum)
	}
	return res, sum
}

func accessOf(sum contracts.PlanSummary, rel string) (contracts.RelationAccess, bool) {
	for _, a := range sum.Access {
		if a.Relation == rel {
			return a, true
		}
	}
	return contracts.RelationAccess{}, false
}

func TestPlanAccessKinds(t *testing.T) {
	s := testServer(t)
	mustExec(t, s.admin, "ANALYZE public.customers, public.orders")
	e := s.engine(t)

	_, sum := plan(t, e, "SELECT count(*) FROM public.orders")
	if a, ok := accessOf(sum, "orders"); !ok || a.Access != contracts.AccessFullScan || a.Rows == nil {
		t.Errorf("full scan: %+v", sum)
	}

	_, sum = plan(t, e, "SELECT amount FROM public.orders WHERE id = 7")
	if a, ok := accessOf(sum, "orders"); !ok || a.Access != contracts.AccessIndex || a.Index != "orders_pkey" {
		t.Errorf("index lookup: %+v", sum)
	}

	// One relation read both ways: a full scan in the sub-select, the index
	// in the outer query.
	_, sum = plan(t, e, "SELECT o.amount, (SELECT count(*) FROM public.orders) FROM public.orders o WHERE o.id = 7")
	if a, ok := accessOf(sum, "orders"); !ok || a.Access != contracts.AccessMixed || a.Index != "orders_pkey" {
		t.Errorf("mixed: %+v", sum)
	}

	// A join: the small side scanned, the other looked up by its key.
	_, sum = plan(t, e, "SELECT c.name, o.amount FROM public.orders o JOIN public.customers c ON c.id = o.customer_id WHERE o.id = 7")
	o, ok1 := accessOf(sum, "orders")
	c, ok2 := accessOf(sum, "customers")
	if !ok1 || !ok2 || o.Access != contracts.AccessIndex || c.Access == contracts.AccessUnknown || c.Access == "" {
		t.Errorf("join: %+v", sum)
	}
	if len(sum.Uninterpreted) != 0 {
		t.Errorf("join: uninterpreted %v, want none", sum.Uninterpreted)
	}

	_, sum = plan(t, e, "SELECT a, b FROM (VALUES (1, 2), (3, 4)) v(a, b) ORDER BY a")
	if strings.Join(sum.Uninterpreted, ",") != "Values Scan" {
		t.Errorf("values: uninterpreted %v, want [Values Scan]", sum.Uninterpreted)
	}
}

// TestPlanNeverRuns shows the statement is planned, not run: a statement
// that fails when it runs plans fine, and one that would run for hours plans
// at once.
func TestPlanNeverRuns(t *testing.T) {
	s := testServer(t)
	e := s.engine(t)
	failing := "SELECT 1 / (id - id) FROM public.orders"
	if _, err := e.Read(context.Background(), req(failing, contracts.ProfileAgentReadOnly)); dbErr(t, err).Class == "" {
		t.Fatal("the failing statement did not fail when read")
	}
	plan(t, e, failing)

	start := time.Now()
	_, sum := plan(t, e, "SELECT count(*) FROM public.orders a, public.orders b, public.orders c, public.orders d")
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("planning took %v: the statement ran", el)
	}
	if sum.Rows == nil || *sum.Rows != 1 || *sum.Cost < 1e6 {
		t.Errorf("summary %+v, want one row at a large cost", sum)
	}
}

// TestPlanGuardedAsRead: what Read refuses, Plan refuses with the same code
// and sends nothing; the catalog check of user functions holds too, and a
// caller cannot write EXPLAIN (ANALYZE) itself.
func TestPlanGuardedAsRead(t *testing.T) {
	s := testServer(t)
	mustExec(t, s.admin, `CREATE FUNCTION public.lower(int) RETURNS text LANGUAGE sql IMMUTABLE AS 'SELECT ''x'''`)
	e := s.engine(t)
	ctx := context.Background()
	for _, q := range []string{
		"DELETE FROM public.orders",
		"SELECT * FROM secret.keys",
		"SELECT lower(id) FROM public.customers",
		"EXPLAIN ANALYZE SELECT * FROM public.orders",
		"EXPLAIN (ANALYZE) DELETE FROM public.orders",
		"SELECT * FROM public.events",
	} {
		_, readErr := e.Read(ctx, req(q, contracts.ProfileAgentReadOnly))
		var want *contracts.Refusal
		if !errors.As(readErr, &want) {
			t.Fatalf("%q: Read gave %v, want a refusal", q, readErr)
		}
		res, _, err := e.Plan(ctx, req(q, contracts.ProfileAgentReadOnly))
		var got *contracts.Refusal
		if !errors.As(err, &got) || got.Code != want.Code {
			t.Errorf("%q: Plan gave %v, want refusal %s", q, err, want.Code)
		}
		if res.Rows != nil {
			t.Errorf("%q: a refused plan returned rows", q)
		}
	}

	// A statement that failed in the run is refused before it is planned.
	ok, _ := plan(t, e, "SELECT id FROM public.customers")
	r := req("select  id from public.customers", contracts.ProfileAgentReadOnly)
	r.Failed = []string{ok.Fingerprint}
	if _, _, err := e.Plan(ctx, r); !isRefusal(err, contracts.RefuseAlreadyFailed) {
		t.Errorf("repeated: %v", err)
	}
	read, err := e.Read(ctx, req("SELECT id FROM public.customers", contracts.ProfileAgentReadOnly))
	if err != nil || read.Fingerprint != ok.Fingerprint {
		t.Errorf("Read fingerprint %q (%v), Plan's %q", read.Fingerprint, err, ok.Fingerprint)
	}
}

func isRefusal(err error, code contracts.Code) bool {
	var ref *contracts.Refusal
	return errors.As(err, &ref) && ref.Code == code
}

// TestPlanHostileCorpus sends every hostile shape through Plan: each is
// refused with its code and the database does not change.
func TestPlanHostileCorpus(t *testing.T) {
	s := testServer(t)
	e := s.engine(t)
	ctx := context.Background()
	before := s.state(t)
	for _, c := range postgrestest.Hostile {
		res, _, err := e.Plan(ctx, req(c.SQL, contracts.ProfileAgentReadOnly))
		if !isRefusal(err, c.Code) {
			t.Errorf("%s: Plan gave %v, want refusal %s", c.Name, err, c.Code)
		}
		if res.Statements != 0 {
			t.Errorf("%s: %d statements sent", c.Name, res.Statements)
		}
	}
	if after := s.state(t); after != before {
		t.Fatalf("the database changed:\n before %s\n after  %s", before, after)
	}
}

// TestPlanParams: parameters are bound to the planned statement as to a read.
func TestPlanParams(t *testing.T) {
	s := testServer(t)
	e := s.engine(t)
	r := req("SELECT amount FROM public.orders WHERE id = $1", contracts.ProfileAgentReadOnly)
	r.Params = []any{7}
	_, sum, err := e.Plan(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := accessOf(sum, "orders"); !ok || a.Access != contracts.AccessIndex {
		t.Errorf("summary %+v", sum)
	}
}

// TestSummarizePGBitmap reads a plan document as PostgreSQL writes it: a
// bitmap heap scan is an index read named by its Bitmap Index Scan child,
// a relation read both ways is mixed, and an uninterpreted node type is
// listed once however often it appears.
func TestSummarizePGBitmap(t *testing.T) {
	doc := []any{map[string]any{"Plan": map[string]any{
		"Node Type": "Hash Join", "Total Cost": 42.5, "Plan Rows": 10.0,
		"Plans": []any{
			map[string]any{"Node Type": "Bitmap Heap Scan", "Relation Name": "orders", "Plan Rows": 30.0,
				"Plans": []any{map[string]any{"Node Type": "BitmapOr", "Plans": []any{
					map[string]any{"Node Type": "Bitmap Index Scan", "Index Name": "orders_created"},
				}}}},
			map[string]any{"Node Type": "Hash", "Plans": []any{
				map[string]any{"Node Type": "Append", "Plans": []any{
					map[string]any{"Node Type": "Seq Scan", "Relation Name": "orders", "Schema": "public", "Plan Rows": 500.0},
					map[string]any{"Node Type": "Function Scan"},
					map[string]any{"Node Type": "Function Scan"},
					map[string]any{"Node Type": "Seq Scan", "Relation Name": "customers", "Plan Rows": 20.0},
				}},
			}},
		},
	}}}
	var sum contracts.PlanSummary
	if err := summarizePG(doc, &sum); err != nil {
		t.Fatal(err)
	}
	if *sum.Cost != 42.5 || *sum.Rows != 10 {
		t.Errorf("cost %v rows %v", *sum.Cost, *sum.Rows)
	}
	got := []string{}
	for _, a := range sum.Access {
		got = append(got, a.Relation+":"+string(a.Access)+":"+a.Index)
	}
	want := "orders:index:orders_created public.orders:full scan: customers:full scan:"
	if strings.Join(got, " ") != want {
		t.Errorf("access %v, want %s", got, want)
	}
	if strings.Join(sum.Uninterpreted, ",") != "Function Scan" {
		t.Errorf("uninterpreted %v", sum.Uninterpreted)
	}
}
