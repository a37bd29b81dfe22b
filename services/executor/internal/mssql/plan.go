package mssql

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	guardmssql "github.com/sondehq/sonde/pkg/guard/mssql"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

var _ engine.Planner = (*Engine)(nil)

// planNote is what SQL Server's estimates need read with.
const planNote = "SQL Server's cost is its optimizer's estimate in its own units; a step on the inner side of a nested loop estimates rows per execution"

// guarded reads req.SQL with the guard and pol, then refuses a statement
// that already failed in the run: what Read does before anything is sent.
func guarded(req engine.Request, pol guard.Policy) (*guard.Statement, *contracts.Refusal) {
	st, ref := guard.Check(guardmssql.Reader{}, req.SQL, pol)
	if ref != nil {
		return nil, ref
	}
	if ref := req.Repeated(st.Fingerprint()); ref != nil {
		return nil, ref
	}
	return st, nil
}

// showplanSQL is what Plan sends, for the record: the statement between
// SHOWPLAN_XML on and off, so the server compiles it and runs none of it.
func showplanSQL(stmt string) string {
	return "SET SHOWPLAN_XML ON\n" + batch(stmt) + "SET SHOWPLAN_XML OFF"
}

// Plan guards req.SQL exactly as Read does — the guard, the repeated
// check, then the server's own showplan held to the guard's rules
// (CheckPlan) — and returns that showplan: the statement is compiled, never
// run. Result.Rows holds the showplan XML as one row (column "showplan");
// Result.Statements counts the statement (compiled only) once the plan
// passed, as Read counts it. Errors as for Read.
func (e *Engine) Plan(ctx context.Context, req engine.Request) (engine.Result, contracts.PlanSummary, error) {
	sum := contracts.PlanSummary{Engine: contracts.EngineMSSQL, Access: []contracts.RelationAccess{}}
	l := e.l
	pol := e.policy(l)
	st, ref := guarded(req, pol)
	if ref != nil {
		return engine.Result{}, sum, ref
	}
	res, doc, err := e.explain(ctx, l, req, st, pol)
	res.Fingerprint = st.Fingerprint()
	if err != nil {
		return res, sum, err
	}
	if err := summarize(doc, &sum); err != nil {
		return res, sum, &contracts.DBError{Class: contracts.DBOther, Message: "the showplan could not be read: " + err.Error()}
	}
	return res, sum, nil
}

// explain reads the showplan of st on one session of l, under the
// request's timeout and the operation's memory, as Read's check does, and
// returns it as a one-row result and as text.
func (e *Engine) explain(ctx context.Context, l *login, req engine.Request, st *guard.Statement, pol guard.Policy) (res engine.Result, doc string, err error) {
	res.SQL = showplanSQL(st.Text)
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	conn, err := l.db.Conn(ctx)
	if err != nil {
		return res, "", classify(ctx, err, req.Timeout)
	}
	sock := l.conn.socket(conn)
	defer func() { release(conn, err, sock) }()
	defer func() {
		var tooLarge *rowset.TooLargeError
		if sock == nil || !sock.tripped.Load() || errors.As(err, &tooLarge) {
			return
		}
		err = &rowset.TooLargeError{By: rowset.ByBytes, Limit: int(min(e.opMem, math.MaxInt32))}
	}()

	start := time.Now()
	defer func() { res.Duration = time.Since(start) }()
	plan, err := showplan(ctx, conn, st.Text)
	if err != nil {
		var ref *contracts.Refusal
		var de *contracts.DBError
		if errors.As(err, &ref) || errors.As(err, &de) {
			return res, "", err
		}
		return res, "", classify(ctx, err, req.Timeout)
	}
	if ref := CheckPlan(plan, st, pol); ref != nil {
		return res, "", ref
	}
	res.Statements = 1
	doc = strings.Join(plan.Docs, "\n")
	set := rowset.New([]contracts.Column{{Name: "showplan", Type: "XML"}}, req.Limits)
	res.Rows = set
	if _, err := set.Add([]any{doc}); err != nil {
		var tooLarge *rowset.TooLargeError
		if errors.As(err, &tooLarge) && req.Limits.Truncate {
			set.Truncated, set.TruncatedBy = true, []string{rowset.ByBytes}
			return res, doc, nil
		}
		return res, "", err
	}
	return res, doc, nil
}

// The PhysicalOp values the summary reads as access to a relation. SQL
// Server's own words decide: a Scan of an index (clustered, nonclustered or
// columnstore) reads all of it, a full scan; only a Seek or a lookup by key
// or RID reads by index.
var (
	fullScanOps = map[string]bool{
		"Table Scan": true, "Clustered Index Scan": true, "Index Scan": true,
		"Columnstore Index Scan": true,
	}
	indexOps = map[string]bool{
		"Index Seek": true, "Clustered Index Seek": true, "Key Lookup": true, "RID Lookup": true,
	}
	// knownOps read no relation of their own: they join, shape, sort or
	// aggregate what the access steps read.
	knownOps = map[string]bool{
		"Hash Match": true, "Nested Loops": true, "Merge Join": true, "Adaptive Join": true,
		"Sort": true, "Top": true, "Top N Sort": true, "Compute Scalar": true, "Filter": true,
		"Stream Aggregate": true, "Hash Aggregate": true, "Window Aggregate": true, "Concatenation": true,
		"Constant Scan": true, "Parallelism": true, "Segment": true, "Sequence Project": true,
		"Assert": true, "Bitmap": true, "Merge Interval": true, "Table Spool": true,
		"Index Spool": true, "Row Count Spool": true, "Window Spool": true,
	}
)

// relOp is one RelOp of a showplan as the summary reads it.
type relOp struct {
	op     string
	rows   *float64
	object *PlanObject
	index  string
}

// summarize reads one showplan document into sum: how each relation is
// read (full scan, index, mixed), the statement's estimated cost and rows,
// and the operators it does not know.
func summarize(doc string, sum *contracts.PlanSummary) error {
	d := xml.NewDecoder(strings.NewReader(doc))
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	var (
		stack    []*relOp
		ops      []*relOp
		seenRoot bool
	)
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch name := t.Name.Local; {
			case name == "ShowPlanXML":
				seenRoot = true
			case stmtElements[name]:
				if sum.Cost == nil {
					sum.Cost = number(attr(t, "StatementSubTreeCost"))
				}
				if sum.Rows == nil {
					sum.Rows = number(attr(t, "StatementEstRows"))
				}
			case name == "RelOp":
				op := &relOp{op: attr(t, "PhysicalOp"), rows: number(attr(t, "EstimateRows"))}
				stack = append(stack, op)
				ops = append(ops, op)
			case name == "Object" && len(stack) > 0 && stack[len(stack)-1].object == nil:
				top := stack[len(stack)-1]
				top.object = &PlanObject{
					Database: unbracket(attr(t, "Database")), Schema: unbracket(attr(t, "Schema")),
					Table: unbracket(attr(t, "Table")),
				}
				top.index = unbracket(attr(t, "Index"))
			}
		case xml.EndElement:
			if t.Name.Local == "RelOp" && len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
	}
	if !seenRoot {
		return errors.New("the document holds no ShowPlanXML")
	}
	if sum.Rows == nil && len(ops) > 0 {
		sum.Rows = ops[0].rows
	}
	at := map[string]int{}
	for _, op := range ops {
		var kind contracts.AccessKind
		switch {
		case fullScanOps[op.op]:
			kind = contracts.AccessFullScan
		case indexOps[op.op]:
			kind = contracts.AccessIndex
		case knownOps[op.op]:
			continue
		}
		if kind == "" || op.object == nil || op.object.Table == "" {
			if !slices.Contains(sum.Uninterpreted, op.op) {
				sum.Uninterpreted = append(sum.Uninterpreted, op.op)
			}
			continue
		}
		rel := op.object.Table
		if op.object.Schema != "" {
			rel = op.object.Schema + "." + rel
		}
		// The index is named whichever way it is read: an Index Scan or
		// Clustered Index Scan walks every entry of it (a full scan), a
		// seek or lookup goes to the entries it needs.
		engine.AddAccess(sum, at, contracts.RelationAccess{Relation: rel, Access: kind, Index: op.index, Rows: op.rows})
	}
	sum.Note = planNote
	return nil
}

// number reads a showplan number attribute; nil when absent or unreadable.
func number(s string) *float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil
	}
	return &f
}
