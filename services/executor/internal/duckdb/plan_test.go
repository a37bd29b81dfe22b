package duckdb

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard/duckdb/duckdbtest"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// plan asks e for the plan of sql and fails the test on an error.
func plan(t *testing.T, e *Engine, sql string) (Result, contracts.PlanSummary) {
	t.Helper()
	res, sum, err := e.Plan(context.Background(), read(sql))
	if err != nil {
		t.Fatalf("Plan(%q): %v", sql, err)
	}
	if sum.Engine != contracts.EngineDuckDB || sum.Cost != nil || sum.Note != planNote {
		t.Errorf("Plan(%q): engine %q cost %v note %q, want duckdb, no cost, %q", sql, sum.Engine, sum.Cost, sum.Note, planNote)
	}
	if res.Statements != 1 || !strings.HasPrefix(res.SQL, explainPrefix) || strings.Contains(strings.ToUpper(res.SQL), "ANALYZE") {
		t.Errorf("Plan(%q) sent %d statements, %q", sql, res.Statements, res.SQL)
	}
	if res.Rows == nil || len(res.Rows.Columns) != 2 || res.Rows.Columns[0].Name != "explain_key" || len(res.Rows.Rows) == 0 {
		t.Fatalf("Plan(%q) rows: %+v", sql, res.Rows)
	}
	return res, sum
}

func access(sum contracts.PlanSummary, rel string) (contracts.RelationAccess, bool) {
	for _, a := range sum.Access {
		if a.Relation == rel {
			return a, true
		}
	}
	return contracts.RelationAccess{}, false
}

func TestPlanFullScan(t *testing.T) {
	e, _ := corpusEngine(t)
	const q = "SELECT id, total FROM orders WHERE status = 'paid'"
	res, sum := plan(t, e, q)
	a, ok := access(sum, "shop.main.orders")
	if !ok || len(sum.Access) != 1 || a.Access != contracts.AccessFullScan || a.Rows == nil || *a.Rows <= 0 {
		t.Fatalf("access %+v, want one full scan of shop.main.orders with estimated rows", sum.Access)
	}
	if sum.Rows == nil || len(sum.Uninterpreted) != 0 {
		t.Errorf("rows %v uninterpreted %v, want an estimate and nothing uninterpreted", sum.Rows, sum.Uninterpreted)
	}
	// The fingerprint is the guard's, as Read sets it.
	read, err := e.Read(context.Background(), read(q))
	if err != nil {
		t.Fatal(err)
	}
	if res.Fingerprint == "" || res.Fingerprint != read.Fingerprint {
		t.Errorf("fingerprint %q, Read's %q", res.Fingerprint, read.Fingerprint)
	}
}

// A point lookup on a primary key: DuckDB (v1.5 through duckdb-go
// v2.10506) plans it as a sequential scan with the key as a pushed-down
// filter, not an ART index scan, on a file opened read-only; the summary
// says what the plan says.
func TestPlanPointLookup(t *testing.T) {
	e, _ := corpusEngine(t)
	_, sum := plan(t, e, "SELECT name FROM customers WHERE id = 2")
	a, ok := access(sum, "shop.main.customers")
	if !ok || len(sum.Access) != 1 {
		t.Fatalf("access %+v, want shop.main.customers", sum.Access)
	}
	if a.Access != contracts.AccessFullScan || a.Rows == nil {
		t.Errorf("access %+v: DuckDB's plan changed; read it again and say what it reports", a)
	}
}

func TestPlanJoin(t *testing.T) {
	e, _ := corpusEngine(t)
	_, sum := plan(t, e, "SELECT c.name, count(*) FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.name ORDER BY 2 DESC")
	var rels []string
	for _, a := range sum.Access {
		rels = append(rels, a.Relation)
		if a.Access != contracts.AccessFullScan {
			t.Errorf("%s: %q, want full scan", a.Relation, a.Access)
		}
	}
	slices.Sort(rels)
	if !slices.Equal(rels, []string{"shop.main.customers", "shop.main.orders"}) {
		t.Errorf("relations %v", rels)
	}
	if len(sum.Uninterpreted) != 0 {
		t.Errorf("uninterpreted %v", sum.Uninterpreted)
	}
}

func TestPlanUninterpreted(t *testing.T) {
	e, _ := corpusEngine(t)
	_, sum := plan(t, e, "SELECT r.range FROM range(10) r JOIN range(5) s ON r.range = s.range")
	if !slices.Equal(sum.Uninterpreted, []string{"RANGE"}) {
		t.Errorf("uninterpreted %v, want [RANGE] once", sum.Uninterpreted)
	}
	if len(sum.Access) != 0 {
		t.Errorf("access %+v, want none", sum.Access)
	}
}

// summarize on a written plan: an index scan, a relation read both ways
// (mixed, rows summed), an unknown operator named once.
func TestSummarize(t *testing.T) {
	doc := `[{"name":"HASH_JOIN","children":[
	  {"name":"TABLE_SCAN","children":[],"extra_info":{"Table":"m.t","Type":"Index Scan","Estimated Cardinality":"1"}},
	  {"name":"SEQ_SCAN","children":[],"extra_info":{"Table":"m.t","Type":"Sequential Scan","Estimated Cardinality":"9"}},
	  {"name":"NEW_THING","children":[{"name":"NEW_THING","children":[]}]}],
	 "extra_info":{"Estimated Cardinality":"3"}}]`
	var sum contracts.PlanSummary
	if err := summarize(doc, &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum.Access) != 1 || sum.Access[0].Access != contracts.AccessMixed || sum.Access[0].Rows == nil || *sum.Access[0].Rows != 10 {
		t.Errorf("access %+v", sum.Access)
	}
	if sum.Rows == nil || *sum.Rows != 3 || !slices.Equal(sum.Uninterpreted, []string{"NEW_THING"}) {
		t.Errorf("rows %v uninterpreted %v", sum.Rows, sum.Uninterpreted)
	}
	if err := summarize("not json", &sum); err == nil {
		t.Error("a plan that is not JSON was read")
	}
}

func TestPlanRefusedAsRead(t *testing.T) {
	e, path := corpusEngine(t)
	before := digest(t, path)
	ctx := context.Background()
	for _, q := range []string{
		"DELETE FROM orders",
		"SELECT * FROM secrets",
		"EXPLAIN ANALYZE SELECT * FROM orders",
	} {
		_, readErr := e.Read(ctx, read(q))
		res, _, err := e.Plan(ctx, read(q))
		var want, got *contracts.Refusal
		if !errors.As(readErr, &want) || !errors.As(err, &got) || got.Code != want.Code {
			t.Errorf("%q: Plan %v, Read %v: want the same refusal", q, err, readErr)
		}
		if res.Statements != 0 || res.Rows != nil {
			t.Errorf("%q: refused, yet %d statements sent", q, res.Statements)
		}
	}
	// A statement that already failed in the run is refused, as by Read.
	res, _ := plan(t, e, "SELECT count(*) FROM orders")
	req := read("select COUNT(*) from orders")
	req.Failed = []string{res.Fingerprint}
	var ref *contracts.Refusal
	if _, _, err := e.Plan(ctx, req); !errors.As(err, &ref) || ref.Code != contracts.RefuseAlreadyFailed {
		t.Errorf("repeated: %v, want already_failed", err)
	}
	if after := digest(t, path); after != before {
		t.Fatal("the database file changed")
	}
}

// Plan never runs the statement: a cast that fails on the table's values
// fails when read, and plans; a cross join of billions of rows plans at
// once.
func TestPlanDoesNotExecute(t *testing.T) {
	e, _ := corpusEngine(t)
	ctx := context.Background()
	const bad = "SELECT CAST(name AS INTEGER) FROM customers"
	var de *contracts.DBError
	if _, err := e.Read(ctx, read(bad)); !errors.As(err, &de) {
		t.Fatalf("Read(%q): %v, want the database's error", bad, err)
	}
	plan(t, e, bad)

	req := engine.Request{SQL: "SELECT count(*) FROM orders a, orders b, orders c, orders d, customers e",
		Limits: refuseLimits, Timeout: 2 * time.Second}
	start := time.Now()
	_, sum, err := e.Plan(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("planning took %v: was it run?", d)
	}
	if len(sum.Access) != 2 {
		t.Errorf("access %+v", sum.Access)
	}
}

// The hostile corpus through Plan: each statement refused with the code
// Read gives it, nothing sent, and the file's bytes unchanged.
func TestPlanHostileCorpus(t *testing.T) {
	e, path := corpusEngine(t)
	before, files := digest(t, path), dirListing(t, path)
	ctx := context.Background()
	for _, c := range duckdbtest.Hostile {
		res, _, err := e.Plan(ctx, read(c.SQL))
		var ref *contracts.Refusal
		if !errors.As(err, &ref) || string(ref.Code) != c.Code {
			t.Errorf("%q: %v, want refusal %s", c.SQL, err, c.Code)
		}
		if res.Statements != 0 {
			t.Errorf("%q: %d statements sent", c.SQL, res.Statements)
		}
	}
	if after := digest(t, path); after != before {
		t.Fatalf("the database file changed: %s -> %s", before, after)
	}
	if after := dirListing(t, path); after != files {
		t.Fatalf("files beside the database changed: %s -> %s", files, after)
	}
}
