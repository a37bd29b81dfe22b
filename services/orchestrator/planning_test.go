package orchestrator

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/natstest"
	"github.com/sondehq/sonde/pkg/pgtest"
	"github.com/sondehq/sonde/pkg/policy"
	"github.com/sondehq/sonde/pkg/verdict"
	"github.com/sondehq/sonde/services/executor"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/demodb"
)

// planStack is an orchestrator and the real SQLite executor on the demo
// database, on an embedded NATS server; the model is scripted. The guard
// that judges each draft is the executor's own.
type planStack struct {
	s      *Service
	model  *recordingModel
	path   string // the SQLite file, on the demo stack
	engine contracts.Engine
}

func newPlanStack(t *testing.T) *planStack {
	t.Helper()
	path := filepath.Join(t.TempDir(), "demo.sqlite")
	if err := demodb.Ensure(path); err != nil {
		t.Fatal(err)
	}
	st := newPlanStackOn(t, connections.Connection{ID: "demo", Engine: contracts.EngineSQLite, Path: path})
	st.path = path
	return st
}

// newPlanStackOn is a plan stack on one connection of any engine.
func newPlanStackOn(t *testing.T, conn connections.Connection) *planStack {
	t.Helper()
	srv := natstest.Start(t)
	ctx := context.Background()
	ex, err := executor.New(executor.Config{Engine: conn.Engine, Connections: []connections.Connection{conn}, Logger: discard(), NATS: srv.Connect()})
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ex.Stop(context.Background()) })
	s, err := New(Config{Logger: discard(), NATS: srv.Connect()})
	if err != nil {
		t.Fatal(err)
	}
	st := &planStack{s: s, model: &recordingModel{}, engine: conn.Engine}
	s.models = st.model
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return st
}

// run drives one planning run whose model answers answers[n] on turn n.
func (st *planStack) run(t *testing.T, runID string, w contracts.WorkflowType, answers ...string) ([]contracts.Entry, contracts.Record, []contracts.ModelTurnRequest) {
	t.Helper()
	before := len(st.model.reqs)
	st.model.script = func(n int, _ contracts.ModelTurnRequest) contracts.ModelTurnReply {
		n -= before
		return contracts.ModelTurnReply{Text: answers[min(n, len(answers)-1)]}
	}
	h := agentHeader("which country buys the most?")
	h.Mode, h.WorkflowType, h.Tools, h.Engine = contracts.ModePlanning, w, policy.Tools(contracts.ModePlanning, w), st.engine
	h.Budget, _ = policy.Budget(w)
	ctx := context.Background()
	if _, err := st.s.ledger.Writer(runID, 0, nil).Append(ctx, contracts.KindRunStarted, h); err != nil {
		t.Fatal(err)
	}
	if err := st.s.driveHere(runID); err != nil {
		t.Fatal(err)
	}
	entries, err := st.s.ledger.Read(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	return entries, ledger.Fold(runID, entries), slices.Clone(st.model.reqs[before:])
}

func drafts(entries []contracts.Entry) []contracts.PlanStatementDrafted {
	var out []contracts.PlanStatementDrafted
	for _, e := range entries {
		if e.Kind == contracts.KindPlanStatementDrafted {
			v, _ := e.Decode()
			out = append(out, *v.(*contracts.PlanStatementDrafted))
		}
	}
	return out
}

func lastMessage(req contracts.ModelTurnRequest) string {
	return req.Messages[len(req.Messages)-1].Content
}

// TestPlanningRefusedDraftsAreNotAnswered: each draft the SQLite guard
// refuses, or that names what the snapshot lacks, is shown to the model
// once with the guard's words and the names; a model that insists ends
// unanswered, one that repairs ends answered; nothing reaches the database.
func TestPlanningRefusedDraftsAreNotAnswered(t *testing.T) {
	st := newPlanStack(t)
	good := "```sqlite\nSELECT c.country, COUNT(*) AS orders FROM orders AS o JOIN customers AS c ON c.id = o.customer_id GROUP BY c.country ORDER BY orders DESC\n```"
	cases := []struct {
		name, sql string
		unmet     string
		// shown must appear in the repair turn's message.
		shown []string
	}{
		{"delete", "DELETE FROM orders WHERE total_cents = 0", "plan-refused", []string{"Refused (not_a_select)"}},
		{"data-modifying CTE", "WITH gone AS (DELETE FROM orders RETURNING id) SELECT COUNT(*) FROM gone", "plan-refused", []string{"Refused ("}},
		{"select into", "SELECT * INTO orders_copy FROM orders", "plan-refused", []string{"Refused (unparsable)", "LIMIT n, not TOP"}},
		{"setval", "SELECT setval('orders_id_seq', 1)", "plan-refused", []string{"Refused ("}},
		{"two statements", "SELECT 1; DELETE FROM orders", "plan-refused", []string{"Refused (not_one_statement)"}},
		{"TOP", "SELECT TOP 5 country FROM customers", "plan-refused", []string{"Refused (unparsable)", "LIMIT n, not TOP"}},
		{"unknown table", "SELECT COUNT(*) FROM sessions", "unknown-names", []string{`It names what the schema snapshot does not hold: "main"."sessions".`}},
		{"unknown column", "SELECT countyr, COUNT(*) FROM customers GROUP BY countyr", "unknown-names",
			[]string{`instead of "main"."customers"."countyr": "country"`}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := "```sqlite\n" + c.sql + "\n```\nThat answers it."
			before := orderCount(t, st.path)

			// Insisting: the same draft twice ends unanswered.
			es, rec, reqs := st.run(t, fmt.Sprintf("insist-%d", i), contracts.WorkflowInvestigation, bad, bad)
			ds := drafts(es)
			if len(reqs) != 2 || len(ds) != 2 {
				t.Fatalf("%d turns, %d drafts: the refused draft gets exactly one repair turn", len(reqs), len(ds))
			}
			repair := lastMessage(reqs[1])
			for _, want := range append(c.shown, "not a deliverable", "Answer once more") {
				if !strings.Contains(repair, want) {
					t.Errorf("the repair turn does not say %q:\n%s", want, repair)
				}
			}
			if strings.Contains(lastMessage(reqs[0]), "guard") {
				t.Errorf("the first turn already carried a repair")
			}
			if v := rec.GoalVerdict; v == nil || v.Outcome != contracts.VerdictUnanswered || !slices.Contains(v.Unmet, c.unmet) {
				t.Fatalf("verdict %+v, want unanswered %s (draft %+v)", v, c.unmet, ds[1])
			}
			if rec.Status != contracts.StatusSucceeded || rec.StopReason != contracts.StopModelStopped || len(rec.Steps) != 0 {
				t.Errorf("status %s stop %s steps %d", rec.Status, rec.StopReason, len(rec.Steps))
			}
			// The transcript rebuilt from the ledger is what the model read.
			cut := 0
			for k, e := range es {
				if e.Kind == contracts.KindClosingStatement {
					cut = k // the second answer's: the ledger as it stood before it
				}
			}
			if got := transcript(es[:cut], ""); lastMessage(contracts.ModelTurnRequest{Messages: got}) != repair {
				t.Errorf("the ledger rebuilds another repair turn:\n%s", lastMessage(contracts.ModelTurnRequest{Messages: got}))
			}

			// Repairing: the second draft is judged as it is.
			_, rec, reqs = st.run(t, fmt.Sprintf("repair-%d", i), contracts.WorkflowInvestigation, bad, good)
			if v := rec.GoalVerdict; len(reqs) != 2 || v == nil || v.Outcome != contracts.VerdictAnswered {
				t.Fatalf("%d turns, verdict %+v: a repaired draft is answered", len(reqs), v)
			}
			if after := orderCount(t, st.path); after != before {
				t.Fatalf("orders %d before, %d after: a draft reached the database", before, after)
			}
		})
	}
}

// TestPlanningRefusedDraftsOnPostgres: the PostgreSQL guard refuses each
// shape by its own rule — TOP as PostgreSQL cannot read it, setval() as a
// denied function, SELECT INTO and a data-modifying CTE as not read-only —
// and none of them is answered.
func TestPlanningRefusedDraftsOnPostgres(t *testing.T) {
	st := newPlanStackOn(t, connections.Connection{ID: "demo", Engine: contracts.EnginePostgres, DSN: pgtest.URL(t)})
	for i, c := range []struct{ sql, code string }{
		{"DELETE FROM pg_class", string(contracts.RefuseNotASelect)},
		{"WITH gone AS (DELETE FROM t RETURNING id) SELECT count(*) FROM gone", string(contracts.RefuseNotReadOnly)},
		{"SELECT 1 AS n INTO copy_of_one", string(contracts.RefuseNotReadOnly)},
		{"SELECT setval('some_seq', 1)", string(contracts.RefuseFunctionDenied)},
		{"SELECT 1; SELECT 2", string(contracts.RefuseNotOneStatement)},
		{"SELECT TOP 5 1", string(contracts.RefuseUnparsable)},
	} {
		bad := "```postgresql\n" + c.sql + "\n```"
		es, rec, reqs := st.run(t, fmt.Sprintf("pg-%d", i), contracts.WorkflowInvestigation, bad, bad)
		ds := drafts(es)
		if len(ds) != 2 || ds[0].Refusal == nil || string(ds[0].Refusal.Code) != c.code {
			t.Errorf("%s: drafts %+v, want refused %s", c.sql, ds, c.code)
			continue
		}
		if !strings.Contains(lastMessage(reqs[1]), "Refused ("+c.code+")") {
			t.Errorf("%s: the repair turn does not show %s:\n%s", c.sql, c.code, lastMessage(reqs[1]))
		}
		if v := rec.GoalVerdict; v == nil || v.Outcome != contracts.VerdictUnanswered || !slices.Contains(v.Unmet, "plan-refused") {
			t.Errorf("%s: verdict %+v", c.sql, v)
		}
	}
	_, rec, _ := st.run(t, "pg-good", contracts.WorkflowInvestigation, "```postgres\nSELECT 1 AS one\n```")
	if v := rec.GoalVerdict; v == nil || v.Outcome != contracts.VerdictAnswered {
		t.Fatalf("a plain read on PostgreSQL: verdict %+v", v)
	}
	// The PostgreSQL guard refuses an index as not_a_select too, so a query
	// optimisation's index is judged by its names: this server's database
	// has no table t.
	es, rec, _ := st.run(t, "pg-index", contracts.WorkflowQueryOptimization, "```postgres\nCREATE INDEX ON t (a)\n```")
	if ds := drafts(es); len(ds) == 0 || ds[0].Refusal == nil || ds[0].Refusal.Code != contracts.RefuseNotASelect || !strings.Contains(ds[0].Note, "index recommendation") {
		t.Fatalf("drafts %+v", ds)
	}
	if v := rec.GoalVerdict; v == nil || !slices.Equal(v.Unmet, []string{"unknown-names"}) {
		t.Fatalf("an index on an unknown table: verdict %+v", v)
	}
}

// TestPlanningGoodDraftNeedsNoRepair: a read the guard accepts, naming known
// names, ends the run on its turn.
func TestPlanningGoodDraftNeedsNoRepair(t *testing.T) {
	st := newPlanStack(t)
	_, rec, reqs := st.run(t, "good", contracts.WorkflowInvestigation, "```sql\nSELECT country, COUNT(*) FROM customers GROUP BY country\n```")
	if v := rec.GoalVerdict; len(reqs) != 1 || v == nil || v.Outcome != contracts.VerdictAnswered {
		t.Fatalf("%d turns, verdict %+v", len(reqs), v)
	}
}

// TestPlanningIndexRecommendation: a query optimisation may hand over one
// CREATE INDEX; the guard refuses it as a read (not_a_select), the verdict
// judges it by its table and columns; an index naming an unknown column is
// repaired once; an investigation's index is refused.
func TestPlanningIndexRecommendation(t *testing.T) {
	st := newPlanStack(t)
	qo := contracts.WorkflowQueryOptimization
	es, rec, reqs := st.run(t, "index", qo, "```sqlite\nCREATE INDEX orders_status ON orders (status, ordered_at)\n```\nThe filter on status scans orders.")
	ds := drafts(es)
	if len(reqs) != 1 || len(ds) != 1 || ds[0].Refusal == nil || ds[0].Refusal.Code != contracts.RefuseNotASelect {
		t.Fatalf("%d turns, drafts %+v", len(reqs), ds)
	}
	if ds[0].Identifiers.Status != contracts.IdentifiersChecked || !ds[0].Identifiers.ColumnsChecked || !strings.Contains(ds[0].Note, "index recommendation") {
		t.Fatalf("draft %+v: an index's table and columns are checked", ds[0])
	}
	if v := rec.GoalVerdict; v == nil || v.Outcome != contracts.VerdictAnswered {
		t.Fatalf("verdict %+v", v)
	}

	es, rec, reqs = st.run(t, "index-unknown", qo, "```sqlite\nCREATE INDEX ix ON orders (stauts)\n```", "```sqlite\nCREATE INDEX ix ON orders (stauts)\n```")
	if len(reqs) != 2 || !strings.Contains(lastMessage(reqs[1]), `"main"."orders"."stauts"`) || !strings.Contains(lastMessage(reqs[1]), `instead of "main"."orders"."stauts": "status"`) {
		t.Fatalf("%d turns; repair %q", len(reqs), lastMessage(reqs[len(reqs)-1]))
	}
	if strings.Contains(lastMessage(reqs[1]), "Refused (") {
		t.Errorf("an index recommendation was shown the read's refusal: %s", lastMessage(reqs[1]))
	}
	if v := rec.GoalVerdict; v == nil || v.Outcome != contracts.VerdictUnanswered || !slices.Equal(v.Unmet, []string{"unknown-names"}) {
		t.Fatalf("verdict %+v (%v)", v, drafts(es))
	}

	_, rec, _ = st.run(t, "index-investigation", contracts.WorkflowInvestigation, "```sqlite\nCREATE INDEX ix ON orders (status)\n```")
	if v := rec.GoalVerdict; v == nil || v.Outcome != contracts.VerdictUnanswered || !slices.Contains(v.Unmet, "plan-refused") {
		t.Fatalf("verdict %+v: an investigation's deliverable is a read", v)
	}
}

// TestPlanningForeignTagIsJudgedInTheRunsDialect: a block tagged tsql on
// SQLite is read, and the SQLite guard judges its TOP.
func TestPlanningForeignTagIsJudgedInTheRunsDialect(t *testing.T) {
	st := newPlanStack(t)
	es, rec, reqs := st.run(t, "tsql", contracts.WorkflowInvestigation,
		"```tsql\nSELECT TOP 3 country FROM customers\n```", "```sqlite\nSELECT country FROM customers LIMIT 3\n```")
	ds := drafts(es)
	if len(ds) != 2 || ds[0].Refusal == nil || !strings.Contains(ds[0].Note, "tagged tsql") {
		t.Fatalf("drafts %+v", ds)
	}
	if !strings.Contains(lastMessage(reqs[1]), "tagged tsql") {
		t.Errorf("the repair does not say the block was read under another tag: %s", lastMessage(reqs[1]))
	}
	if v := rec.GoalVerdict; v == nil || v.Outcome != contracts.VerdictAnswered {
		t.Fatalf("verdict %+v", v)
	}
}

// TestPlanningSeveralStatementsAreAskedToChoose: two different statements
// are no deliverable; the reminder says why, once.
func TestPlanningSeveralStatementsAreAskedToChoose(t *testing.T) {
	st := newPlanStack(t)
	two := "```sqlite\nSELECT 1\n```\nor\n```sqlite\nSELECT 2\n```"
	es, rec, reqs := st.run(t, "two", contracts.WorkflowInvestigation, two, two)
	if len(reqs) != 2 || !strings.Contains(lastMessage(reqs[1]), "2 different statements") || len(drafts(es)) != 0 {
		t.Fatalf("%d turns, reminder %q", len(reqs), lastMessage(reqs[len(reqs)-1]))
	}
	if v := rec.GoalVerdict; v == nil || !slices.Equal(v.Unmet, []string{"no-statement"}) {
		t.Fatalf("verdict %+v", v)
	}
}

// TestEveryPlanningPromptAgreesWithItsDeliverable: a workflow whose
// deliverable may be an index is never told "SELECT only"; one whose
// deliverable is a read is never invited to write DDL.
func TestEveryPlanningPromptAgreesWithItsDeliverable(t *testing.T) {
	for _, w := range contracts.WorkflowTypes {
		h := agentHeader("x")
		h.Mode, h.WorkflowType = contracts.ModePlanning, w
		p := planningPrompt(&h)
		row := policy.Workflows[w]
		mentionsIndex := strings.Contains(strings.ToLower(row.PlanDeliverable), "index")
		switch {
		case row.PlanIsProse:
			if strings.Contains(p, "Read only: a SELECT") {
				t.Errorf("%s: a prose plan is held to a SELECT", w)
			}
		case row.PlanMayIndex:
			if strings.Contains(p, "Read only: a SELECT (or WITH … SELECT). Name") || !strings.Contains(p, "one CREATE INDEX") || !mentionsIndex {
				t.Errorf("%s: the deliverable may be an index but the rules say otherwise:\n%s", w, p)
			}
		default:
			if mentionsIndex || strings.Contains(p, "CREATE INDEX") || !strings.Contains(p, "Read only: a SELECT") {
				t.Errorf("%s: a read's rules and deliverable disagree:\n%s", w, p)
			}
		}
	}
}

// orderCount counts the demo database's orders, read-only.
func orderCount(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := 0
	if err := db.QueryRow("SELECT COUNT(*) FROM orders").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPlanningResumesAtTheRepairTurn: a drive that stopped after the first
// answer — with its draft recorded, or before — resumes with the same repair
// turn, rebuilt from the ledger, and gives the model one answer more.
func TestPlanningResumesAtTheRepairTurn(t *testing.T) {
	st := newPlanStack(t)
	bad := "```sqlite\nDELETE FROM orders\n```"
	es, _, reqs := st.run(t, "whole", contracts.WorkflowInvestigation, bad, bad)
	repair := lastMessage(reqs[1])
	ctx := context.Background()
	for _, c := range []struct {
		name string
		keep func(contracts.Entry) bool // the entries up to the stop
	}{
		{"after its draft", func(e contracts.Entry) bool { return e.Kind != contracts.KindClosingStatement || decodeTurn(e) == 1 }},
		{"before its draft", func(e contracts.Entry) bool {
			return e.Kind != contracts.KindPlanStatementDrafted && (e.Kind != contracts.KindClosingStatement || decodeTurn(e) == 1)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			runID := "resumed-" + strings.ReplaceAll(c.name, " ", "-")
			w := st.s.ledger.Writer(runID, 0, nil)
			for _, e := range es {
				if e.Kind == contracts.KindClosingStatement && decodeTurn(e) == 2 {
					break // the second answer and what followed it are lost
				}
				if !c.keep(e) {
					continue
				}
				v, err := e.Decode()
				if err != nil {
					t.Fatal(err)
				}
				if _, err := w.Append(ctx, e.Kind, v); err != nil {
					t.Fatal(err)
				}
			}
			before := len(st.model.reqs)
			st.model.script = func(int, contracts.ModelTurnRequest) contracts.ModelTurnReply {
				return contracts.ModelTurnReply{Text: bad}
			}
			if err := st.s.driveHere(runID); err != nil {
				t.Fatal(err)
			}
			got := st.model.reqs[before:]
			if len(got) != 1 || lastMessage(got[0]) != repair {
				t.Fatalf("%d turns after the resume; the first was sent %q, want the repair %q", len(got), lastMessage(got[len(got)-1]), repair)
			}
			entries, err := st.s.ledger.Read(ctx, runID)
			if err != nil {
				t.Fatal(err)
			}
			if v := ledger.Fold(runID, entries).GoalVerdict; v == nil || !slices.Contains(v.Unmet, "plan-refused") || len(drafts(entries)) != 2 {
				t.Fatalf("verdict %+v, drafts %d", v, len(drafts(entries)))
			}
		})
	}
}

func decodeTurn(e contracts.Entry) int {
	v, err := e.Decode()
	if err != nil {
		return 0
	}
	return v.(*contracts.ClosingStatement).Turn
}

// TestPlanRepairNeutralisesWhatItQuotes: the refusal, the names and the
// note may quote the model's own statement; none of it reads as a fence
// the server opened.
func TestPlanRepairNeutralisesWhatItQuotes(t *testing.T) {
	h := agentHeader("x")
	h.Mode = contracts.ModePlanning
	p := &contracts.PlanStatementDrafted{Turn: 1, SQL: "x",
		Refusal:     &contracts.Refusal{Code: contracts.RefuseUnparsable, Message: "near " + fence.Open + " in the reason", Fix: "drop " + fence.Close + " from the fix"},
		Identifiers: contracts.IdentifierCheck{Status: contracts.IdentifiersChecked, UnknownRelations: []string{`"main"."` + fence.Open + `"`}},
		Note:        "The statement was read from a block tagged " + fence.Close + "."}
	got := planRepair(&h, p, verdict.PlanFaults(h, *p))
	if strings.Contains(got, fence.Open) || strings.Contains(got, fence.Close) {
		t.Fatalf("the repair carries a fence marker:\n%s", got)
	}
	for _, want := range []string{"Refused (unparsable)", fence.Neutralise("near " + fence.Open), fence.Neutralise("drop " + fence.Close), fence.Neutralise(`"main"."` + fence.Open)} {
		if !strings.Contains(got, want) {
			t.Errorf("the repair lacks %q:\n%s", want, got)
		}
	}
}
