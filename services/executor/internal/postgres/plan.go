package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	pgguard "github.com/sondehq/sonde/pkg/guard/postgres"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

var _ engine.Planner = (*Engine)(nil)

// explainPrefix is what the executor puts before a guarded statement to read
// its estimating plan: never ANALYZE (which would run it), nor BUFFERS or
// any option that needs ANALYZE. The caller's text never holds it: a caller
// who writes EXPLAIN is refused by the guard like any statement that is not
// a SELECT.
const explainPrefix = "EXPLAIN (FORMAT JSON) "

// guarded reads req.SQL with the guard and the connection's policy, then
// refuses a statement that already failed in the run: what Read and Plan
// both do before anything is sent.
func (e *Engine) guarded(req engine.Request) (*guard.Statement, pgguard.Uses, *contracts.Refusal) {
	st, uses, ref := e.reader.ReadUses(req.SQL)
	if ref == nil {
		ref = guard.Apply(st, e.policy)
	}
	if ref != nil {
		return nil, uses, ref
	}
	if ref := req.Repeated(st.Fingerprint()); ref != nil {
		return nil, uses, ref
	}
	if uses.Parameters != len(req.Params) {
		return nil, uses, &contracts.Refusal{Code: contracts.RefuseBadRequest,
			Message: fmt.Sprintf("the statement has %d parameters and %d values were bound", uses.Parameters, len(req.Params)),
			Fix:     "bind exactly one value per parameter: $1 is the first value, $2 the second"}
	}
	return st, uses, nil
}

// Plan guards req.SQL exactly as Read does and sends EXPLAIN (FORMAT JSON)
// of the guarded text in Read's envelope: BEGIN READ ONLY, the statement
// timeout, the catalog check of the functions and operators it calls, the
// wire bound, ROLLBACK. PostgreSQL plans the statement and never runs it.
// Result.Rows holds the plan as PostgreSQL wrote it: one row, one column
// "QUERY PLAN", its JSON document.
func (e *Engine) Plan(ctx context.Context, req engine.Request) (engine.Result, contracts.PlanSummary, error) {
	sum := contracts.PlanSummary{Engine: contracts.EnginePostgres, Access: []contracts.RelationAccess{}}
	st, uses, ref := e.guarded(req)
	if ref != nil {
		return engine.Result{}, sum, ref
	}
	res, err := e.runChecked(ctx, explainPrefix+st.Text, req.Params, req, statementObjects(st, &uses))
	res.Fingerprint = st.Fingerprint()
	if err != nil {
		return res, sum, err
	}
	return res, sum, summarizeResult(res, &sum)
}

// summarizeResult reads the result of an EXPLAIN (FORMAT JSON) into sum;
// a plan cut by the result's bounds is said to be, and not read.
func summarizeResult(res engine.Result, sum *contracts.PlanSummary) error {
	if res.Rows == nil || len(res.Rows.Rows) == 0 || len(res.Rows.Rows[0]) == 0 {
		return &contracts.DBError{Class: contracts.DBOther, Message: "EXPLAIN returned no plan"}
	}
	if res.Rows.Truncated {
		sum.Note = "the plan was larger than the result may hold: it was cut, and the summary reads nothing of it"
		return nil
	}
	if err := summarizePG(res.Rows.Rows[0][0], sum); err != nil {
		return &contracts.DBError{Class: contracts.DBOther, Message: "the plan could not be read: " + err.Error()}
	}
	return nil
}

// pgNode is the part of an EXPLAIN (FORMAT JSON) node the summary reads.
type pgNode struct {
	NodeType     string   `json:"Node Type"`
	RelationName string   `json:"Relation Name"`
	Schema       string   `json:"Schema"`
	Alias        string   `json:"Alias"`
	IndexName    string   `json:"Index Name"`
	IndexCond    string   `json:"Index Cond"`
	TotalCost    *float64 `json:"Total Cost"`
	PlanRows     *float64 `json:"Plan Rows"`
	Plans        []pgNode `json:"Plans"`
}

// pgKnown are the node types the summary reads as structure around the
// scans: they read no relation themselves, and say nothing of access.
var pgKnown = map[string]bool{
	"Result": true, "Append": true, "Merge Append": true, "Nested Loop": true,
	"Merge Join": true, "Hash Join": true, "Hash": true, "Sort": true,
	"Incremental Sort": true, "Aggregate": true, "Group": true, "Limit": true,
	"Unique": true, "Materialize": true, "Memoize": true, "Gather": true,
	"Gather Merge": true, "SubPlan": true, "Subquery Scan": true, "WindowAgg": true,
	"Bitmap Index Scan": true, "BitmapAnd": true, "BitmapOr": true,
}

// summarizePG reads the plan document (the decoded JSON of the QUERY PLAN
// cell) into sum: how each relation is read, the top node's estimates, and
// the node types it did not interpret.
func summarizePG(doc any, sum *contracts.PlanSummary) error {
	raw, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	if s, ok := doc.(string); ok { // the text form, should a driver hand it over undecoded
		raw = []byte(s)
	}
	var plans []struct {
		Plan pgNode `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &plans); err != nil {
		return err
	}
	if len(plans) == 0 {
		return fmt.Errorf("an empty plan")
	}
	top := plans[0].Plan
	sum.Cost, sum.Rows = top.TotalCost, top.PlanRows
	w := &pgWalk{sum: sum, at: map[string]int{}, seen: map[string]bool{}}
	w.walk(top)
	return nil
}

type pgWalk struct {
	sum  *contracts.PlanSummary
	at   map[string]int // relation → its index in sum.Access
	seen map[string]bool
}

func (w *pgWalk) walk(n pgNode) {
	switch n.NodeType {
	case "Seq Scan":
		w.access(n, contracts.AccessFullScan, "")
	case "Index Scan", "Index Only Scan":
		// Without an Index Cond the scan walks the whole index from one
		// end (for its order, or to cover the columns): a full scan of the
		// index, however soon a Limit above may stop it — the Limit shows
		// in the cost, not in how the relation is read. Only a condition
		// on the index makes it an index read.
		kind := contracts.AccessIndex
		if n.IndexCond == "" {
			kind = contracts.AccessFullScan
		}
		w.access(n, kind, n.IndexName)
	case "Bitmap Heap Scan":
		// A Bitmap Index Scan always has an Index Cond: an index read.
		w.access(n, contracts.AccessIndex, bitmapIndex(n))
	default:
		if !pgKnown[n.NodeType] && !w.seen[n.NodeType] {
			w.seen[n.NodeType] = true
			w.sum.Uninterpreted = append(w.sum.Uninterpreted, n.NodeType)
		}
	}
	for _, c := range n.Plans {
		w.walk(c)
	}
}

// bitmapIndex names the index of a bitmap heap scan's Bitmap Index Scan
// child (the first, when a BitmapAnd/Or combines several).
func bitmapIndex(n pgNode) string {
	for _, c := range n.Plans {
		if c.NodeType == "Bitmap Index Scan" && c.IndexName != "" {
			return c.IndexName
		}
		if s := bitmapIndex(c); s != "" {
			return s
		}
	}
	return ""
}

// access records one read of a relation: a relation read by a full scan in
// one step and an index in another is mixed. Its rows are the first step's
// estimate (an inner step's estimate is per loop, so steps do not add up).
func (w *pgWalk) access(n pgNode, kind contracts.AccessKind, index string) {
	name := n.RelationName
	if name == "" {
		name = n.Alias
	}
	if n.Schema != "" && n.RelationName != "" {
		name = n.Schema + "." + n.RelationName
	}
	i, ok := w.at[name]
	if !ok {
		w.at[name] = len(w.sum.Access)
		ra := contracts.RelationAccess{Relation: name, Access: kind, Index: index}
		if n.PlanRows != nil {
			r := *n.PlanRows
			ra.Rows = &r
		}
		w.sum.Access = append(w.sum.Access, ra)
		return
	}
	ra := &w.sum.Access[i]
	if ra.Access != kind {
		ra.Access = contracts.AccessMixed
	}
	if ra.Index == "" {
		ra.Index = index
	}
}
