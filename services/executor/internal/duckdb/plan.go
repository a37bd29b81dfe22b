package duckdb

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

var _ engine.Planner = (*Engine)(nil)

// explainPrefix is what the executor puts before a guarded statement to
// read its estimating plan. Never ANALYZE, which would run it. The caller's
// own text never holds EXPLAIN: the guard refuses it like any statement
// that is not a SELECT. The newline keeps a leading comment of the
// statement from reaching into the prefix.
const explainPrefix = "EXPLAIN (FORMAT JSON)\n"

// planNote is what DuckDB's plans cannot tell.
const planNote = "DuckDB's plans carry row estimates but no cost"

// guarded reads req.SQL with the guard and the connection's policy, then
// refuses a statement that already failed in the run: what Read does before
// anything is sent.
func (e *Engine) guarded(req engine.Request) (*guard.Statement, *contracts.Refusal) {
	st, ref := guard.Check(e.guard, req.SQL, e.policy)
	if ref != nil {
		return nil, ref
	}
	if ref := req.Repeated(st.Fingerprint()); ref != nil {
		return nil, ref
	}
	return st, nil
}

// Plan guards req.SQL exactly as Read does, has DuckDB's prepare agree it is
// one SELECT, and sends EXPLAIN (FORMAT JSON) of the guarded text under the
// request's timeout: DuckDB plans the statement and runs none of it.
// Result.Rows holds the plan as DuckDB returned it (explain_key,
// explain_value: "physical_plan" and its JSON). Errors as for Read.
func (e *Engine) Plan(ctx context.Context, req engine.Request) (Result, contracts.PlanSummary, error) {
	sum := contracts.PlanSummary{Engine: contracts.EngineDuckDB, Access: []contracts.RelationAccess{}, Note: planNote}
	st, ref := e.guarded(req)
	if ref != nil {
		return Result{}, sum, ref
	}
	res, err := e.explain(ctx, st.Text, req.Params, req.Limits, req.Timeout)
	res.Fingerprint = st.Fingerprint()
	if err != nil {
		return res, sum, err
	}
	doc := ""
	if res.Rows != nil {
		for _, row := range res.Rows.Rows {
			if len(row) == 2 && row[0] == "physical_plan" {
				doc, _ = row[1].(string)
			}
		}
	}
	switch {
	case res.Rows != nil && res.Rows.Truncated:
		sum.Access = append(sum.Access, contracts.RelationAccess{Access: contracts.AccessUnknown})
		sum.Note = planNote + "; the plan was larger than the result may hold: it was cut, and the summary reads nothing of it"
		return res, sum, nil
	case doc == "":
		return res, sum, &contracts.DBError{Class: contracts.DBOther, Message: "EXPLAIN returned no physical plan"}
	}
	if err := summarize(doc, &sum); err != nil {
		return res, sum, &contracts.DBError{Class: contracts.DBOther, Message: "the plan could not be read: " + err.Error()}
	}
	return res, sum, nil
}

// explain sends EXPLAIN of a guarded statement in Read's envelope (run):
// the deadline, the file check, DuckDB's prepare agreeing that stmt is one
// SELECT, then the plan's rows collected under limits.
func (e *Engine) explain(ctx context.Context, stmt string, params []any, limits rowset.Limits, timeout time.Duration) (res Result, err error) {
	res.SQL = explainPrefix + stmt
	ctx, conn, _, release, err := e.agreed(ctx, stmt, len(params), timeout)
	if err != nil {
		return res, err
	}
	defer release()

	start := time.Now()
	defer func() { res.Duration = time.Since(start) }()
	res.Statements = 1
	rows, err := conn.QueryContext(ctx, res.SQL, params...)
	if err != nil {
		return res, e.failed(err, timeout)
	}
	defer rows.Close()
	set, err := rowset.Collect(rows, limits, value, nil)
	res.Rows = set
	var tooLarge *rowset.TooLargeError
	if err != nil && !errors.As(err, &tooLarge) {
		return res, e.failed(err, timeout)
	}
	return res, err
}

// planNode is the part of a node of EXPLAIN (FORMAT JSON) the summary reads.
type planNode struct {
	Name      string                     `json:"name"`
	Children  []planNode                 `json:"children"`
	ExtraInfo map[string]json.RawMessage `json:"extra_info"`
}

// info is one extra_info entry as text ("" when absent or not a string).
func (n planNode) info(key string) string {
	var s string
	if raw, ok := n.ExtraInfo[key]; ok {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

// cardinality is the node's estimated rows, nil when it gives none.
func (n planNode) cardinality() *float64 {
	s := n.info("Estimated Cardinality")
	if s == "" {
		s = strings.TrimPrefix(n.info("EC"), "~")
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return nil
	}
	return &f
}

// scanOps are the operators that read a stored relation; the node's Type
// tells an index scan from a sequential one. DuckDB has no full scan of an
// index (nothing like SQLite's SCAN … USING COVERING INDEX or SQL Server's
// Index Scan): it plans an ART index scan only to look up the keys a
// pushed-down equality or range filter names, and reads every other table
// sequentially, so "Index Scan" is an index read.
var scanOps = map[string]bool{"SEQ_SCAN": true, "TABLE_SCAN": true, "INDEX_SCAN": true}

// knownOps are operators that read no stored relation and need no word in
// the summary: they shape, join, sort or aggregate what the scans read.
var knownOps = map[string]bool{
	"PROJECTION": true, "FILTER": true, "ORDER_BY": true, "TOP_N": true, "LIMIT": true,
	"STREAMING_LIMIT": true, "LIMIT_PERCENT": true, "HASH_JOIN": true, "NESTED_LOOP_JOIN": true,
	"PIECEWISE_MERGE_JOIN": true, "BLOCKWISE_NL_JOIN": true, "CROSS_PRODUCT": true, "IE_JOIN": true,
	"ASOF_JOIN": true, "POSITIONAL_JOIN": true, "LEFT_DELIM_JOIN": true, "RIGHT_DELIM_JOIN": true,
	"DELIM_JOIN": true, "DELIM_SCAN": true, "HASH_GROUP_BY": true, "PERFECT_HASH_GROUP_BY": true,
	"UNGROUPED_AGGREGATE": true, "SIMPLE_AGGREGATE": true, "WINDOW": true, "STREAMING_WINDOW": true,
	"UNION": true, "DUMMY_SCAN": true, "EMPTY_RESULT": true, "COLUMN_DATA_SCAN": true,
	"CTE": true, "CTE_SCAN": true, "RECURSIVE_CTE": true, "RECURSIVE_CTE_SCAN": true,
	"RESULT_COLLECTOR": true, "EXPLAIN": true,
}

// summarize reads DuckDB's JSON physical plan into sum: each relation's
// access in plan order (an index scan where the node's Type says so, a
// full scan otherwise; both in different steps make it mixed), the
// estimated rows of the root, and operators it does not know.
func summarize(doc string, sum *contracts.PlanSummary) error {
	var roots []planNode
	if err := json.Unmarshal([]byte(doc), &roots); err != nil {
		return err
	}
	if len(roots) == 0 {
		return errors.New("the plan holds no operator")
	}
	at := map[string]int{}
	var walk func(n planNode)
	walk = func(n planNode) {
		switch {
		case scanOps[n.Name]:
			rel := n.info("Table")
			kind := contracts.AccessFullScan
			if n.Name == "INDEX_SCAN" || strings.Contains(strings.ToLower(n.info("Type")), "index") {
				kind = contracts.AccessIndex
			}
			if rel == "" {
				// A scan of no named relation (a table function's).
				addUninterpreted(sum, n.Name)
				break
			}
			engine.AddAccess(sum, at, contracts.RelationAccess{Relation: rel, Access: kind, Index: n.info("Index"), Rows: n.cardinality()})
		case !knownOps[n.Name]:
			addUninterpreted(sum, n.Name)
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	for _, r := range roots {
		walk(r)
	}
	// The statement's estimate is its top-most node that gives one (an
	// ORDER_BY gives none; what it sorts is what it returns).
	for n := &roots[0]; n != nil; {
		if c := n.cardinality(); c != nil {
			sum.Rows = c
			break
		}
		if len(n.Children) != 1 {
			break
		}
		n = &n.Children[0]
	}
	return nil
}

func addUninterpreted(sum *contracts.PlanSummary, name string) {
	if !slices.Contains(sum.Uninterpreted, name) {
		sum.Uninterpreted = append(sum.Uninterpreted, name)
	}
}
