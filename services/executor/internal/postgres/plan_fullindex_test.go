package postgres

import (
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/handover"
)

// An Index Scan or Index Only Scan with no Index Cond walks the whole index
// (for its order, or to cover the columns): a full scan, the index kept by
// name, and the auto-execute gate does not take it for an index read. One
// with a condition, and a bitmap scan, stay index reads. Real plans.
func TestPlanIndexWithoutConditionIsFullScan(t *testing.T) {
	s := testServer(t)
	mustExec(t, s.admin, "ANALYZE public.customers, public.orders")
	e := s.engine(t)
	for _, c := range []struct {
		sql, access, index string
		gate               bool // the plan alone passes the gate
	}{
		// Limit → Index Scan using orders_pkey, no Index Cond.
		{"SELECT id, amount FROM public.orders ORDER BY id LIMIT 5", "full scan", "orders_pkey", false},
		// Index Scan using orders_pkey, Index Cond (id = 7).
		{"SELECT amount FROM public.orders WHERE id = 7", "index", "orders_pkey", true},
		// max(id): Index Only Scan Backward, Index Cond (id IS NOT NULL).
		{"SELECT max(id) FROM public.orders", "index", "orders_pkey", true},
	} {
		res, sum := plan(t, e, c.sql)
		a, ok := accessOf(sum, "orders")
		if !ok || string(a.Access) != c.access || a.Index != c.index {
			t.Errorf("%q: %+v, want %s by %s (plan %v)", c.sql, sum.Access, c.access, c.index, res.Rows.Rows)
		}
		p := sum
		failed := handover.Failed(handover.Evidence{Engine: contracts.EnginePostgres, Executed: true, Plan: &p, ElapsedMs: 1})
		if pass := len(failed) == 0; pass != c.gate {
			t.Errorf("%q: gate passes %v, want %v (%v)", c.sql, pass, c.gate, failed)
		}
	}
}

// summarizePG on written nodes: the Index Cond decides, whatever the node.
func TestSummarizePGIndexCond(t *testing.T) {
	doc := []any{map[string]any{"Plan": map[string]any{
		"Node Type": "Append", "Total Cost": 10.0, "Plan Rows": 3.0,
		"Plans": []any{
			map[string]any{"Node Type": "Index Only Scan", "Relation Name": "a", "Index Name": "a_i"},
			map[string]any{"Node Type": "Index Scan", "Relation Name": "b", "Index Name": "b_i", "Index Cond": "(x = 1)"},
			map[string]any{"Node Type": "Index Scan", "Relation Name": "c", "Index Name": "c_i", "Filter": "(x = 1)"},
			map[string]any{"Node Type": "Index Scan", "Relation Name": "b", "Index Name": "b_i"},
		},
	}}}
	var sum contracts.PlanSummary
	if err := summarizePG(doc, &sum); err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, a := range sum.Access {
		got += a.Relation + ":" + string(a.Access) + ":" + a.Index + " "
	}
	if want := "a:full scan:a_i b:mixed:b_i c:full scan:c_i "; got != want {
		t.Errorf("access %q, want %q", got, want)
	}
}
