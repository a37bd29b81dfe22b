package handover_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/handover"
)

func cost(c float64) *float64 { return &c }

// safePlan is a plan the gate passes on engine.
func safePlan(engine contracts.Engine) *contracts.PlanSummary {
	p := &contracts.PlanSummary{Engine: engine, Access: []contracts.RelationAccess{
		{Relation: "orders", Access: contracts.AccessIndex, Index: "orders_customer_id"},
		{Relation: "customers", Access: contracts.AccessIndex, Index: "INTEGER PRIMARY KEY"},
	}}
	if engine == contracts.EnginePostgres {
		p.Cost = cost(12.5)
	}
	return p
}

// riskyPlan is a plan the gate refuses on engine.
func riskyPlan(engine contracts.Engine) *contracts.PlanSummary {
	p := safePlan(engine)
	p.Access[0].Access = contracts.AccessFullScan
	return p
}

// check asserts the gate's answer: auto-executed with no warning when
// nothing failed, else applied with a warning naming exactly the failed
// conditions and saying what to do.
func check(t *testing.T, e handover.Evidence, failed ...handover.Condition) {
	t.Helper()
	h, warning := handover.Gate(e)
	if len(failed) == 0 {
		if h != contracts.HandoverAutoExecuted || warning != "" {
			t.Fatalf("%+v: got %s %q, want auto-executed", e, h, warning)
		}
		return
	}
	if h != contracts.HandoverApplied {
		t.Fatalf("%+v: got %s, want applied (failed %v)", e, h, failed)
	}
	if !strings.HasPrefix(warning, "The statement was placed in the editor but not run: ") || !strings.HasSuffix(warning, ".") {
		t.Fatalf("warning is not a sentence: %q", warning)
	}
	for _, c := range []handover.Condition{handover.CondExecuted, handover.CondPlan, handover.CondElapsed} {
		named := strings.Contains(warning, "("+string(c)+")")
		want := false
		for _, f := range failed {
			want = want || f == c
		}
		if named != want {
			t.Fatalf("%+v: warning %q names %s: %v, want %v", e, warning, c, named, want)
		}
	}
	got := handover.Failed(e)
	if len(got) != len(failed) {
		t.Fatalf("Failed = %+v, want %v", got, failed)
	}
	for i, f := range got {
		if f.Condition != failed[i] || f.Reason == "" || f.Fix == "" {
			t.Fatalf("Failed[%d] = %+v, want %s with a reason and a fix", i, f, failed[i])
		}
	}
}

// TestGateEightCombinations enumerates the three conditions on each engine
// the gate weighs.
func TestGateEightCombinations(t *testing.T) {
	for _, engine := range []contracts.Engine{contracts.EnginePostgres, contracts.EngineSQLite} {
		for mask := range 8 {
			executed, planSafe, fast := mask&1 != 0, mask&2 != 0, mask&4 != 0
			t.Run(fmt.Sprintf("%s/executed=%v,plan=%v,fast=%v", engine, executed, planSafe, fast), func(t *testing.T) {
				e := handover.Evidence{Engine: engine, Executed: executed, Plan: riskyPlan(engine), ElapsedMs: 2500}
				var failed []handover.Condition
				if !executed {
					failed = append(failed, handover.CondExecuted)
				}
				if planSafe {
					e.Plan = safePlan(engine)
				} else {
					failed = append(failed, handover.CondPlan)
				}
				if fast {
					e.ElapsedMs = 40
				} else {
					failed = append(failed, handover.CondElapsed)
				}
				check(t, e, failed...)
			})
		}
	}
}

// TestGateBoundaries: the thresholds are inclusive.
func TestGateBoundaries(t *testing.T) {
	pg := func(c *float64, ms int64) handover.Evidence {
		p := safePlan(contracts.EnginePostgres)
		p.Cost = c
		return handover.Evidence{Engine: contracts.EnginePostgres, Executed: true, Plan: p, ElapsedMs: ms}
	}
	check(t, pg(cost(handover.MaxPlanCost), handover.MaxElapsedMs))
	check(t, pg(cost(0), 0))
	check(t, pg(cost(handover.MaxPlanCost+0.01), 10), handover.CondPlan)
	check(t, pg(cost(12), handover.MaxElapsedMs+1), handover.CondElapsed)
	check(t, pg(cost(12), -1), handover.CondElapsed)
	sqlite := handover.Evidence{Engine: contracts.EngineSQLite, Executed: true, Plan: safePlan(contracts.EngineSQLite), ElapsedMs: handover.MaxElapsedMs}
	check(t, sqlite)
	sqlite.ElapsedMs++
	check(t, sqlite, handover.CondElapsed)
}

// TestGateRiskyPlans: every plan shape that must not pass, per engine, and
// the shapes that differ between the engines.
func TestGateRiskyPlans(t *testing.T) {
	pg, lite := contracts.EnginePostgres, contracts.EngineSQLite
	with := func(engine contracts.Engine, f func(*contracts.PlanSummary)) *contracts.PlanSummary {
		p := safePlan(engine)
		f(p)
		return p
	}
	access := func(k contracts.AccessKind) func(*contracts.PlanSummary) {
		return func(p *contracts.PlanSummary) { p.Access[1].Access = k }
	}
	cases := []struct {
		name   string
		engine contracts.Engine
		plan   *contracts.PlanSummary
		safe   bool
		says   string
	}{
		{"pg no plan", pg, nil, false, "inspect the plan"},
		{"sqlite no plan", lite, nil, false, "inspect the plan"},
		{"pg full scan", pg, with(pg, access(contracts.AccessFullScan)), false, "customers by a full scan"},
		{"pg unknown access", pg, with(pg, access(contracts.AccessUnknown)), false, "could not read"},
		{"pg empty access kind", pg, with(pg, access("")), false, "could not read"},
		{"pg mixed", pg, with(pg, access(contracts.AccessMixed)), true, ""},
		{"pg no relation", pg, with(pg, func(p *contracts.PlanSummary) { p.Access = nil }), false, "names no relation"},
		{"pg no cost", pg, with(pg, func(p *contracts.PlanSummary) { p.Cost = nil }), false, "no estimated cost"},
		{"pg negative cost", pg, with(pg, func(p *contracts.PlanSummary) { p.Cost = cost(-1) }), false, "not a cost"},
		{"pg NaN cost", pg, with(pg, func(p *contracts.PlanSummary) { p.Cost = cost(math.NaN()) }), false, "not a cost"},
		{"pg cost over", pg, with(pg, func(p *contracts.PlanSummary) { p.Cost = cost(1e6) }), false, "more than 50000"},
		{"pg uninterpreted", pg, with(pg, func(p *contracts.PlanSummary) { p.Uninterpreted = []string{"Foreign Scan"} }), false, "Foreign Scan"},
		{"pg hypothetical", pg, with(pg, func(p *contracts.PlanSummary) { p.HypotheticalIndex = "CREATE INDEX ON orders (status)" }), false, "as if an index"},
		{"pg plan of sqlite", pg, safePlan(lite), false, "sqlite plan"},
		{"sqlite full scan", lite, with(lite, access(contracts.AccessFullScan)), false, "customers by a full scan"},
		{"sqlite unknown access", lite, with(lite, access(contracts.AccessUnknown)), false, "could not read"},
		{"sqlite mixed", lite, with(lite, access(contracts.AccessMixed)), false, "a full scan in one step"},
		{"sqlite no relation", lite, with(lite, func(p *contracts.PlanSummary) { p.Access = []contracts.RelationAccess{} }), false, "names no relation"},
		{"sqlite temp b-tree", lite, with(lite, func(p *contracts.PlanSummary) { p.Uninterpreted = []string{"USE TEMP B-TREE FOR ORDER BY"} }), false, "USE TEMP B-TREE"},
		{"sqlite hypothetical", lite, with(lite, func(p *contracts.PlanSummary) { p.HypotheticalIndex = "CREATE INDEX i ON t (a)" }), false, "as if an index"},
		{"sqlite with a cost", lite, with(lite, func(p *contracts.PlanSummary) { p.Cost = cost(1e9) }), true, ""},
		{"sqlite plan of pg", lite, safePlan(pg), false, "postgres plan"},
		{"plan names no engine", lite, with(lite, func(p *contracts.PlanSummary) { p.Engine = "" }), true, ""},
		{"duckdb", contracts.EngineDuckDB, safePlan(contracts.EngineDuckDB), false, "not weighed"},
		{"mssql", contracts.EngineMSSQL, safePlan(contracts.EngineMSSQL), false, "not weighed"},
		{"no engine", "", with(lite, func(p *contracts.PlanSummary) { p.Engine = "" }), false, "an unknown engine"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := handover.Evidence{Engine: tc.engine, Executed: true, Plan: tc.plan, ElapsedMs: 5}
			if tc.safe {
				check(t, e)
				return
			}
			check(t, e, handover.CondPlan)
			if _, w := handover.Gate(e); !strings.Contains(strings.ToLower(w), strings.ToLower(tc.says)) {
				t.Fatalf("warning %q does not say %q", w, tc.says)
			}
		})
	}
}
