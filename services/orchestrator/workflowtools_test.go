package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/policy"
)

// The specialist tools through the run loop: the model and the executors
// scripted, the ledger and the artifact store the real ones.

// calls is a script sending the given calls, one per turn, then stopping.
func calls(cs ...contracts.ModelToolCall) func(int, contracts.ModelTurnRequest) contracts.ModelTurnReply {
	return func(n int, _ contracts.ModelTurnRequest) contracts.ModelTurnReply {
		if n >= len(cs) {
			return contracts.ModelTurnReply{}
		}
		c := cs[n]
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%d", n)
		}
		return contracts.ModelTurnReply{ToolCalls: []contracts.ModelToolCall{c}}
	}
}

func tc(name, args string) contracts.ModelToolCall {
	return contracts.ModelToolCall{Name: name, Arguments: args}
}

// driveWorkflow drives one run of workflow w to its end.
func (h *harness) driveWorkflow(t *testing.T, runID string, w contracts.WorkflowType, autoExecute bool, engine contracts.Engine) ([]contracts.Entry, contracts.Record) {
	t.Helper()
	ctx := context.Background()
	budget, _ := policy.Budget(w)
	header := contracts.RunStarted{Mode: contracts.ModeAgent, WorkflowType: w, Objective: "test", AutoExecute: autoExecute,
		ConnectionID: "demo", Engine: engine, Actor: contracts.Actor{ID: "tester"}, Budget: budget,
		Tools: policy.Tools(contracts.ModeAgent, w)}
	if _, err := h.s.ledger.Writer(runID, 0, nil).Append(ctx, contracts.KindRunStarted, header); err != nil {
		t.Fatal(err)
	}
	if err := h.s.driveHere(runID); err != nil {
		t.Fatal(err)
	}
	entries, err := h.s.ledger.Read(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	return entries, ledger.Fold(runID, entries)
}

// stored answers an executor request with a stored artifact of cols and
// rows; a plan reply carries plan. keep false leaves the artifact unstored
// (its rows released).
func (h *harness) stored(t *testing.T, req contracts.ExecRequest, cols []string, rows [][]any, plan *contracts.PlanSummary, keep bool) contracts.ExecReply {
	t.Helper()
	columns := make([]contracts.Column, len(cols))
	for i, c := range cols {
		columns[i] = contracts.Column{Name: c}
	}
	sum := contracts.ArtifactSummary{CorrelationID: req.CorrelationID, Columns: columns, Rows: len(rows)}
	if keep {
		if err := h.s.artifacts.Put(context.Background(), contracts.Artifact{ArtifactSummary: sum, RunID: req.RunID, SQL: req.SQL, Data: rows}); err != nil {
			t.Fatal(err)
		}
	}
	// The cells are the rows as an executor writes them for the model: the
	// figure check reads what the model was shown.
	cells := make([][]string, len(rows))
	for i, r := range rows {
		cells[i] = make([]string, len(r))
		for j, v := range r {
			cells[i][j] = fmt.Sprint(v)
		}
	}
	return contracts.ExecReply{Status: contracts.ExecOK, Artifact: &sum, Cells: cells, DurationMs: 5, Plan: plan,
		Fingerprint: "fp:" + strings.ToLower(strings.Join(strings.Fields(req.SQL), " "))}
}

// refusals lists the codes of the run's tool-refused entries, in order.
func refusalCodes(t *testing.T, entries []contracts.Entry) []contracts.Code {
	var out []contracts.Code
	for _, e := range entries {
		if e.Kind == contracts.KindToolRefused {
			p, _ := e.Decode()
			out = append(out, p.(*contracts.ToolRefused).Code)
		}
	}
	return out
}

func f64(f float64) *float64 { return &f }

var (
	scanPlan  = &contracts.PlanSummary{Engine: contracts.EnginePostgres, Cost: f64(5000), Rows: f64(10), Access: []contracts.RelationAccess{{Relation: "invoice", Access: contracts.AccessFullScan}}}
	indexPlan = &contracts.PlanSummary{Engine: contracts.EnginePostgres, Cost: f64(12.5), Rows: f64(10), Access: []contracts.RelationAccess{{Relation: "invoice", Access: contracts.AccessIndex, Index: "invoice_customer_idx"}}}
)

// TestComparePlansJoinsTheLedger: the model names two plan ids; the
// statements and plans come from the ledger, the summary is the server's
// and says the plans are estimates. Something that is not a plan of this
// run, a plan whose rows are gone, and the same plan twice are refused,
// each with its own code; nothing reaches an executor.
func TestComparePlansJoinsTheLedger(t *testing.T) {
	h := newHarness(t, Config{})
	h.model.script = calls(
		tc(policy.ToolInspectPlan, `{"sql":"SELECT * FROM invoice WHERE customer_id = 4","reason":null,"hypotheticalIndex":null}`),         // r1
		tc(policy.ToolInspectPlan, `{"sql":"SELECT * FROM invoice WHERE customer_id = 4 LIMIT 5","reason":null,"hypotheticalIndex":null}`), // r2
		tc(policy.ToolRunReadQuery, `{"sql":"SELECT count(*) FROM invoice","reason":null}`),                                                // r3
		tc(policy.ToolInspectPlan, `{"sql":"SELECT 1 FROM invoice","reason":null,"hypotheticalIndex":null}`),                               // r4, released
		tc(policy.ToolComparePlans, `{"before":"r1","after":"r3"}`),
		tc(policy.ToolComparePlans, `{"before":"r1","after":"r4"}`),
		tc(policy.ToolComparePlans, `{"before":"r1","after":"r1"}`),
		tc(policy.ToolComparePlans, `{"before":"r1","after":{"source":"artifact","correlationId":"r2"}}`),
		tc(policy.ToolRecommendChange, `{"kind":"rewrite","statement":"SELECT … LIMIT 5","rationale":"cost 5000 → 12.5","evidence":[{"source":"artifact","correlationId":"r2"}]}`),
		tc(policy.ToolComposeReport, `{"claims":[{"text":"the rewrite uses the index","evidence":[{"source":"artifact","correlationId":"r2"}]}]}`),
	)
	h.exec.answer = func(n int, req contracts.ExecRequest) (contracts.ExecReply, error) {
		switch n {
		case 0:
			return h.stored(t, req, []string{"QUERY PLAN"}, [][]any{{"[]"}}, scanPlan, true), nil
		case 1:
			return h.stored(t, req, []string{"QUERY PLAN"}, [][]any{{"[]"}}, indexPlan, true), nil
		case 2:
			return h.stored(t, req, []string{"count"}, [][]any{{412.0}}, nil, true), nil
		}
		return h.stored(t, req, []string{"QUERY PLAN"}, [][]any{{"[]"}}, scanPlan, false), nil
	}
	entries, rec := h.driveWorkflow(t, "cmp", contracts.WorkflowQueryOptimization, false, contracts.EnginePostgres)
	if got, want := joinCodes(refusalCodes(t, entries)), "unverifiable_plan,plan_result_released,invalid_arguments"; got != want {
		t.Fatalf("refusals %s, want %s", got, want)
	}
	if len(rec.Comparisons) != 1 {
		t.Fatalf("comparisons %+v", rec.Comparisons)
	}
	c := rec.Comparisons[0]
	if c.Before != "r1" || c.After != "r2" || c.BeforeSQL != "SELECT * FROM invoice WHERE customer_id = 4" || !strings.HasSuffix(c.AfterSQL, "LIMIT 5") ||
		c.BeforePlan == nil || c.AfterPlan == nil {
		t.Fatalf("comparison %+v", c)
	}
	for _, want := range []string{`"invoice": full scan before, index after ("invoice_customer_idx")`, "Estimated cost 5000 → 12.5 (×0.003)", estimatesOnly} {
		if !strings.Contains(c.Summary, want) || !strings.Contains(c.Content, want) {
			t.Errorf("summary lacks %q: %s", want, c.Summary)
		}
	}
	if h.exec.readCount() != 4 {
		t.Errorf("the executor was asked %d times; compare_plans and recommend_change reach none", h.exec.readCount())
	}
	if len(rec.Recommendations) != 1 || rec.Recommendations[0].Kind != "rewrite" || len(rec.Recommendations[0].Diagnosed) != 1 {
		t.Errorf("recommendations %+v", rec.Recommendations)
	}
	if rec.GoalVerdict == nil || rec.GoalVerdict.Rule != "agent-query-optimization.4" || rec.GoalVerdict.Outcome != contracts.VerdictAnswered {
		t.Errorf("verdict %+v", rec.GoalVerdict)
	}
}

// TestRecommendChangeIsRecordedNeverRun: a recommendation reaches no
// executor; its evidence must resolve; its kind is index or rewrite; an
// index that cites no plan is recorded with a note, and the verdict says
// no-plan-evidence.
func TestRecommendChangeIsRecordedNeverRun(t *testing.T) {
	h := newHarness(t, Config{})
	h.model.script = calls(
		tc(policy.ToolRunReadQuery, `{"sql":"SELECT count(*) FROM invoice","reason":null}`), // r1
		tc(policy.ToolRecommendChange, `{"kind":"vacuum","statement":"VACUUM","rationale":"r","evidence":[{"source":"artifact","correlationId":"r1"}]}`),
		tc(policy.ToolRecommendChange, `{"kind":"index","statement":"CREATE INDEX i ON invoice (customer_id)","rationale":"r","evidence":[{"source":"artifact","correlationId":"r9"}]}`),
		tc(policy.ToolRecommendChange, `{"kind":"index","statement":"CREATE INDEX i ON invoice (customer_id)","rationale":"r","evidence":[]}`),
		tc(policy.ToolRecommendChange, `{"kind":"index","statement":"DROP TABLE invoice","rationale":"r","evidence":[{"source":"artifact","correlationId":"r1"}]}`),
		tc(policy.ToolComposeReport, `{"claims":[{"text":"412 invoices","evidence":[{"source":"artifact","correlationId":"r1"}]}]}`),
		// Refused once for its shortfall (report_incomplete), then recorded.
		tc(policy.ToolComposeReport, `{"claims":[{"text":"412 invoices","evidence":[{"source":"artifact","correlationId":"r1"}]}]}`),
	)
	h.exec.answer = func(n int, req contracts.ExecRequest) (contracts.ExecReply, error) {
		return h.stored(t, req, []string{"count"}, [][]any{{412.0}}, nil, true), nil
	}
	entries, rec := h.driveWorkflow(t, "rec", contracts.WorkflowQueryOptimization, false, contracts.EnginePostgres)
	if got, want := joinCodes(refusalCodes(t, entries)), "invalid_arguments,unresolved_evidence,invalid_arguments,report_incomplete"; got != want {
		t.Fatalf("refusals %s, want %s", got, want)
	}
	if len(rec.Recommendations) != 1 || rec.Recommendations[0].Statement != "DROP TABLE invoice" || len(rec.Recommendations[0].Diagnosed) != 0 ||
		!strings.Contains(rec.Recommendations[0].Content, "It cites no plan") || !strings.Contains(rec.Recommendations[0].Content, "never executed") {
		t.Fatalf("recommendations %+v", rec.Recommendations)
	}
	if h.exec.readCount() != 1 {
		t.Errorf("the executor was asked %d times, want the one read", h.exec.readCount())
	}
	if v := rec.GoalVerdict; v == nil || v.Outcome != contracts.VerdictUnanswered || strings.Join(v.Unmet, ",") != "no-plan-evidence" {
		t.Errorf("verdict %+v", v)
	}
}

// TestPresentAnswerRefusesEachWrongAnswer drives every present_answer
// refusal, then one good answer, then a second answer refused before its
// (malformed) arguments are read.
func TestPresentAnswerRefusesEachWrongAnswer(t *testing.T) {
	h := newHarness(t, Config{})
	h.model.script = calls(
		tc(policy.ToolRunReadQuery, `{"sql":"SELECT country, total FROM sales","reason":null}`),                         // r1: 3 rows
		tc(policy.ToolInspectPlan, `{"sql":"SELECT country, total FROM sales","reason":null,"hypotheticalIndex":null}`), // r2: a plan
		tc(policy.ToolInspectSchema, `{"table":"sales","schema":null,"pattern":null,"after":null}`),                     // r3: catalog read
		tc(policy.ToolRunReadQuery, `{"sql":"SELECT sum(total) FROM sales","reason":null}`),                             // r4: one row
		tc(policy.ToolRunReadQuery, `{"sql":"SELECT country FROM sales","reason":null}`),                                // r5: released
		tc(policy.ToolPresentAnswer, `{"artifact":"r77","presentation":{"kind":"table","spec":null}}`),
		tc(policy.ToolPresentAnswer, `{"artifact":"r2","presentation":{"kind":"table","spec":null}}`),
		tc(policy.ToolPresentAnswer, `{"artifact":"r3","presentation":{"kind":"table","spec":null}}`),
		tc(policy.ToolPresentAnswer, `{"artifact":"schema","presentation":{"kind":"table","spec":null}}`),
		tc(policy.ToolPresentAnswer, `{"artifact":"r5","presentation":{"kind":"table","spec":null}}`),
		tc(policy.ToolPresentAnswer, `{"artifact":"r1","presentation":{"kind":"chart","spec":{"type":"bar","x":"country","y":["revenue"],"caption":"c"}}}`),
		tc(policy.ToolPresentAnswer, `{"artifact":"r1","presentation":{"kind":"chart","spec":{"type":"bar","x":"total","y":["country"],"caption":"c"}}}`),
		tc(policy.ToolPresentAnswer, `{"artifact":"r4","presentation":{"kind":"chart","spec":{"type":"bar","x":"sum","y":["sum"],"caption":"c"}}}`),
		tc(policy.ToolPresentAnswer, `{"artifact":"r1","presentation":{"kind":"chart","spec":{"type":"pie","x":"country","y":["total","total"],"caption":"c"}}}`),
		tc(policy.ToolPresentAnswer, `{"artifact":"r1","presentation":{"kind":"chart","spec":{"type":"scatter","x":"country","y":["total"],"caption":"c"}}}`),
		tc(policy.ToolPresentAnswer, `{"artifact":"r1","presentation":{"kind":"chart","spec":{"type":"histogram","x":"country","y":["total"],"caption":"c"}}}`),
		tc(policy.ToolPresentAnswer, `{"artifact":"r1","presentation":{"kind":"chart","spec":{"type":"bar","x":"country","y":"total","caption":"Revenue by country"}}}`),
		tc(policy.ToolPresentAnswer, `not json at all`),
		tc(policy.ToolComposeReport, `{"claims":[{"text":"the USA leads","evidence":[{"source":"artifact","correlationId":"r1"}]}]}`),
	)
	h.exec.answer = func(n int, req contracts.ExecRequest) (contracts.ExecReply, error) {
		switch n {
		case 0:
			return h.stored(t, req, []string{"country", "total"}, [][]any{{"USA", 523.06}, {"Canada", "303.96"}, {"France", nil}}, nil, true), nil
		case 1:
			return h.stored(t, req, []string{"QUERY PLAN"}, [][]any{{"[]"}}, scanPlan, true), nil
		case 2:
			return h.stored(t, req, []string{"relation"}, [][]any{{"sales"}}, nil, true), nil
		case 3:
			return h.stored(t, req, []string{"sum"}, [][]any{{2328.6}}, nil, true), nil
		}
		return h.stored(t, req, []string{"country"}, [][]any{{"USA"}, {"Canada"}}, nil, false), nil
	}
	entries, rec := h.driveWorkflow(t, "ans", contracts.WorkflowDataAnalysis, false, contracts.EngineSQLite)
	want := []contracts.Code{
		contracts.RefuseAnswerArtifactUnknown, contracts.RefuseAnswerNotADataRead, contracts.RefuseAnswerStatementUnknown,
		contracts.RefuseAnswerStatementUnknown, contracts.RefuseAnswerResultReleased, contracts.RefuseChartColumnNotInResult,
		contracts.RefuseChartColumnNotNumeric, contracts.RefuseChartTooFewRows, contracts.RefuseChartShapeMismatch,
		contracts.RefuseChartShapeMismatch, contracts.RefuseChartShapeMismatch, contracts.RefuseAnswerAlreadyRecorded,
	}
	if got := refusalCodes(t, entries); joinCodes(got) != joinCodes(want) {
		t.Fatalf("refusals\n got %v\nwant %v", got, want)
	}
	a := rec.Answer
	if a == nil || a.CorrelationID != "r1" || a.SQL != "SELECT country, total FROM sales" || a.Presentation.Chart == nil ||
		strings.Join(a.Presentation.Chart.Y, ",") != "total" || a.Handover != contracts.HandoverNone {
		t.Fatalf("answer %+v", a)
	}
	// The chart decision is recorded with the answer: France's NULL total
	// is the one point not drawn.
	if c := a.Chart; c == nil || strings.Join(c.Series, ",") != "total" || c.Rows != 3 ||
		len(c.Dropped) != 1 || c.Dropped[0] != (contracts.ChartDrop{Row: 2, Column: "total", Why: contracts.ChartDropNull}) {
		t.Errorf("chart decision %+v", a.Chart)
	}
	// The refusal naming a wrong column lists the real ones, fenced.
	for _, e := range entries {
		if p, _ := e.Decode(); e.Kind == contracts.KindToolRefused && p.(*contracts.ToolRefused).Code == contracts.RefuseChartColumnNotInResult {
			if fix := p.(*contracts.ToolRefused).Fix; !strings.Contains(fix, `"country", "total"`) || !strings.Contains(fix, "UNTRUSTED_CONTENT") {
				t.Errorf("the column refusal does not list the real columns fenced: %q", fix)
			}
		}
	}
	if v := rec.GoalVerdict; v == nil || v.Rule != "agent-data-analysis.2" || v.Outcome != contracts.VerdictAnswered {
		t.Errorf("verdict %+v", v)
	}
}

// TestAutoExecuteGateReadsTheLedger: on a run opened with autoExecute, the
// answer's handover is decided from the ledger: auto-executed when the run
// read the answer's own plan (index access) and the read was fast; applied,
// with the gate's warning, when no plan of that statement was read.
func TestAutoExecuteGateReadsTheLedger(t *testing.T) {
	for _, c := range []struct {
		name     string
		planned  string
		want     contracts.Handover
		warnings bool
	}{
		{"plan of the answer", "SELECT country, total FROM sales WHERE id = 4", contracts.HandoverAutoExecuted, false},
		{"plan of another statement", "SELECT 1", contracts.HandoverApplied, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			sqlite := &contracts.PlanSummary{Engine: contracts.EngineSQLite, Access: []contracts.RelationAccess{{Relation: "sales", Access: contracts.AccessIndex}}}
			h.model.script = calls(
				tc(policy.ToolInspectPlan, fmt.Sprintf(`{"sql":%q,"reason":null,"hypotheticalIndex":null}`, c.planned)),
				tc(policy.ToolRunReadQuery, `{"sql":"SELECT country, total FROM sales WHERE id = 4","reason":null}`),
				tc(policy.ToolPresentAnswer, `{"artifact":"r2","presentation":"table"}`),
				tc(policy.ToolComposeReport, `{"claims":[{"text":"t","evidence":[{"source":"artifact","correlationId":"r2"}]}]}`),
			)
			h.exec.answer = func(n int, req contracts.ExecRequest) (contracts.ExecReply, error) {
				if n == 0 {
					return h.stored(t, req, []string{"detail"}, [][]any{{"SEARCH sales"}}, sqlite, true), nil
				}
				return h.stored(t, req, []string{"country", "total"}, [][]any{{"USA", 1.0}}, nil, true), nil
			}
			_, rec := h.driveWorkflow(t, "gate", contracts.WorkflowDataAnalysis, true, contracts.EngineSQLite)
			a := rec.Answer
			if a == nil || a.Handover != c.want || (a.HandoverWarning != "") != c.warnings {
				t.Fatalf("answer %+v", a)
			}
		})
	}
}

// TestProfileAndOperationsAreSteps: profile_table and inspect_operations
// reach the executor as steps (intent before effect, a statement counted),
// with the model's table spelling and kind, never SQL; a profile is
// recorded as table-profiled; a reading goes under the operations profile;
// a kind outside the six is refused before any executor is asked.
func TestProfileAndOperationsAreSteps(t *testing.T) {
	h := newHarness(t, Config{})
	h.model.script = calls(
		tc(policy.ToolProfileTable, `{"table":"main.invoice","depth":"distribution","fromColumn":null}`),
		tc(policy.ToolComposeReport, `{"claims":[{"text":"billing_state is present in 210 rows","evidence":[{"source":"artifact","correlationId":"r1"}]}]}`),
	)
	profile := &contracts.TableProfile{Table: contracts.NameRef{Schema: "main", Name: "invoice"}, Depth: contracts.DepthDistribution, Rows: 412,
		Columns: []contracts.ColumnProfile{{Name: "billing_state", Present: 210}}, Findings: []contracts.Finding{{Code: contracts.FindingHighNull, Column: "billing_state", Detail: "49% null"}}}
	h.exec.answer = func(n int, req contracts.ExecRequest) (contracts.ExecReply, error) {
		r := h.stored(t, req, []string{"column", "present"}, [][]any{{"billing_state", 210.0}}, nil, true)
		r.Profile = profile
		return r, nil
	}
	_, rec := h.driveWorkflow(t, "prof", contracts.WorkflowDatabaseAssessment, false, contracts.EngineSQLite)
	asked := h.exec.stepCalls(rec.Steps[0].StepID)
	if len(asked) != 1 || asked[0].op != contracts.OpProfile || asked[0].req.Table != "main.invoice" || asked[0].req.Depth != contracts.DepthDistribution ||
		asked[0].req.SQL != "" || !asked[0].intent {
		t.Fatalf("executor calls %+v", asked)
	}
	if len(rec.Profiles) != 1 || rec.Profiles[0].Profile == nil || rec.Profiles[0].Profile.Rows != 412 || rec.Profiles[0].CorrelationID != "r1" {
		t.Fatalf("profiles %+v", rec.Profiles)
	}
	if v := rec.GoalVerdict; v == nil || v.Outcome != contracts.VerdictAnswered || v.Rule != "agent-database-assessment.2" {
		t.Errorf("verdict %+v", v)
	}

	h2 := newHarness(t, Config{})
	h2.model.script = calls(
		tc(policy.ToolInspectOperations, `{"kind":"locks","schema":null,"limit":null}`),
		tc(policy.ToolInspectOperations, `{"kind":"sessions","schema":"public","limit":"5"}`),
		tc(policy.ToolRunReadQuery, `{"sql":"SELECT 1","reason":null}`),
		tc(policy.ToolComposeReport, `{"claims":[{"text":"no session is blocked","evidence":[{"source":"artifact","correlationId":"r1"}]}]}`),
	)
	h2.exec.answer = func(n int, req contracts.ExecRequest) (contracts.ExecReply, error) {
		return h2.stored(t, req, []string{"session"}, [][]any{}, nil, true), nil
	}
	entries, rec2 := h2.driveWorkflow(t, "ops", contracts.WorkflowOperations, false, contracts.EnginePostgres)
	if got := joinCodes(refusalCodes(t, entries)); got != "invalid_arguments,unknown_tool" {
		t.Fatalf("refusals %s", got)
	}
	if h2.exec.readCount() != 1 {
		t.Fatalf("the executor was asked %d times", h2.exec.readCount())
	}
	c := h2.exec.calls[len(h2.exec.calls)-1]
	if c.op != contracts.OpOperations || c.req.Kind != contracts.OpsSessions || c.req.Schema != "public" || c.req.Limit != 5 || c.req.Profile != contracts.ProfileAgentOperations {
		t.Fatalf("executor call %+v", c)
	}
	if v := rec2.GoalVerdict; v == nil || v.Outcome != contracts.VerdictAnswered || v.Rule != "agent-operations.3" {
		t.Errorf("an empty reading is an answer: verdict %+v", v)
	}
}

// TestWorkflowRulesNameOnlyOfferedTools: every agent workflow's rules name
// its own tools and no other (a rule about a tool the run lacks sends the
// model after something it cannot call), and auto-execute's rule is said
// only to a run that can hand over.
func TestWorkflowRulesNameOnlyOfferedTools(t *testing.T) {
	all := []string{policy.ToolInspectSchema, policy.ToolRunReadQuery, policy.ToolInspectPlan, policy.ToolComposeReport, policy.ToolComparePlans,
		policy.ToolRecommendChange, policy.ToolProfileTable, policy.ToolInspectOperations, policy.ToolPresentAnswer}
	for _, w := range contracts.WorkflowTypes {
		for _, auto := range []bool{false, true} {
			b, _ := policy.Budget(w)
			h := &contracts.RunStarted{Mode: contracts.ModeAgent, WorkflowType: w, Engine: contracts.EnginePostgres, Budget: b,
				Tools: policy.Tools(contracts.ModeAgent, w), AutoExecute: auto}
			rules := systemPrompt(h, b.MaxTurns)
			for _, name := range all {
				offered := false
				for _, have := range h.Tools {
					offered = offered || have == name
				}
				// inspect_plan and inspect_schema appear in the shared
				// repair sentence of every tool result, not in the rules.
				if strings.Contains(rules, name) != offered {
					t.Errorf("%s (autoExecute %v): rules mention %s: %v, offered: %v", w, auto, name, strings.Contains(rules, name), offered)
				}
			}
			handover := strings.Contains(rules, "Hand-over:")
			if handover != (auto && policy.Workflows[w].AutoExecute) {
				t.Errorf("%s (autoExecute %v): hand-over rule said: %v", w, auto, handover)
			}
		}
	}
	// Every spec decodes as a JSON object (strictness is checked elsewhere).
	for name, sp := range toolSpecs {
		var v map[string]any
		if json.Unmarshal(sp.Parameters, &v) != nil {
			t.Errorf("%s: parameters do not decode", name)
		}
	}
}

// TestRecordedToolsAreShownTheirResult: a call that reaches no database and
// records what it was told (a comparison, a recommendation, an answer) is
// answered in the rebuilt transcript with exactly what the model read, and
// a profile's record beside its step adds no second answer to the call.
func TestRecordedToolsAreShownTheirResult(t *testing.T) {
	b, _ := policy.Budget(contracts.WorkflowDataAnalysis)
	at := func(turn int, tool string) contracts.ToolCall {
		return contracts.ToolCall{Turn: turn, CallID: fmt.Sprint("c", turn), Tool: tool, Arguments: json.RawMessage(`{}`)}
	}
	entries := []contracts.Entry{
		mustEntry(t, contracts.KindRunStarted, contracts.RunStarted{Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowDataAnalysis,
			Objective: "o", Budget: b, Tools: policy.Tools(contracts.ModeAgent, contracts.WorkflowDataAnalysis)}),
		mustEntry(t, contracts.KindToolInvoked, contracts.ToolInvoked{ToolCall: at(1, policy.ToolProfileTable), StepID: "s1", CorrelationID: "r1"}),
		mustEntry(t, contracts.KindToolCompleted, contracts.ToolCompleted{ToolCall: at(1, policy.ToolProfileTable), StepID: "s1", Outcome: contracts.OutcomeOK, Content: "profiled"}),
		mustEntry(t, contracts.KindTableProfiled, contracts.TableProfiled{ToolCall: at(1, policy.ToolProfileTable), StepID: "s1", CorrelationID: "r1"}),
		mustEntry(t, contracts.KindPlanComparison, contracts.PlanComparison{ToolCall: at(2, policy.ToolComparePlans), Content: "compared"}),
		mustEntry(t, contracts.KindRecommendation, contracts.Recommendation{ToolCall: at(3, policy.ToolRecommendChange), Content: "recommended"}),
		mustEntry(t, contracts.KindAnswerComposed, contracts.AnswerComposed{ToolCall: at(4, policy.ToolPresentAnswer), Content: "answered"}),
	}
	var got []string
	for _, m := range transcript(entries, "") {
		if m.Role == contracts.RoleTool {
			got = append(got, m.Content)
		}
	}
	if strings.Join(got, ",") != "profiled,compared,recommended,answered" {
		t.Fatalf("tool results %q", got)
	}
}

// TestNoRepairsNoticeNamesTheRunsOwnTools: once the repairs are spent, the
// notice names the tools of this run that are refused, and says
// inspect_schema still answers only to a run that has it.
func TestNoRepairsNoticeNamesTheRunsOwnTools(t *testing.T) {
	e := &contracts.DBError{Class: contracts.DBOther, Message: "boom"}
	ops := errorContent(e, "", 0, contracts.EnginePostgres, policy.Tools(contracts.ModeAgent, contracts.WorkflowOperations))
	if !strings.Contains(ops, "No repairs are left: inspect_operations is refused") || strings.Contains(ops, "inspect_schema") {
		t.Errorf("operations: %q", ops)
	}
	inv := errorContent(e, "", 0, contracts.EnginePostgres, policy.Tools(contracts.ModeAgent, contracts.WorkflowDataAnalysis))
	if !strings.Contains(inv, "run_read_query, inspect_plan and profile_table are refused from now on; inspect_schema still answers") {
		t.Errorf("data-analysis: %q", inv)
	}
}

// TestModelVisibleWorkflowRules keeps each agent workflow's rules and tool
// specs in a golden file (testdata/visible/rules-<workflow>.golden), so a
// change to what a specialist run is told shows in review. Run with
// -update after a reviewed change.
func TestModelVisibleWorkflowRules(t *testing.T) {
	for _, w := range contracts.WorkflowTypes {
		b, _ := policy.Budget(w)
		h := &contracts.RunStarted{Mode: contracts.ModeAgent, WorkflowType: w, Engine: contracts.EnginePostgres, Budget: b,
			Tools: policy.Tools(contracts.ModeAgent, w), AutoExecute: policy.Workflows[w].AutoExecute}
		var sb strings.Builder
		sb.WriteString(systemPrompt(h, b.MaxTurns))
		for _, sp := range specsFor(h.Tools) {
			var v any
			_ = json.Unmarshal(sp.Parameters, &v)
			params, _ := json.MarshalIndent(v, "", "  ")
			fmt.Fprintf(&sb, "\n## %s\n%s\n%s\n", sp.Name, sp.Description, params)
		}
		golden(t, "rules-"+string(w)+".golden", sb.String())
	}
}
