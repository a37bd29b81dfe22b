package orchestrator

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
)

// The report's gates, driven through the run loop with a scripted model
// over a real embedded NATS ledger: a citation names only a result the
// model was shown; compose_report's own checks; and the verdict a report
// would earn, computed before it is recorded.

// turns is a script sending each turn's calls together, then stopping.
func turns(ts ...[]contracts.ModelToolCall) func(int, contracts.ModelTurnRequest) contracts.ModelTurnReply {
	return func(n int, _ contracts.ModelTurnRequest) contracts.ModelTurnReply {
		if n >= len(ts) {
			return contracts.ModelTurnReply{}
		}
		out := make([]contracts.ModelToolCall, len(ts[n]))
		for i, c := range ts[n] {
			if c.ID == "" {
				c.ID = fmt.Sprintf("call_%d_%d", n, i)
			}
			out[i] = c
		}
		return contracts.ModelTurnReply{ToolCalls: out}
	}
}

func one(c contracts.ModelToolCall) []contracts.ModelToolCall { return []contracts.ModelToolCall{c} }

// reportCiting is a compose_report of one claim citing ids.
func reportCiting(text string, ids ...string) contracts.ModelToolCall {
	var refs []string
	for _, id := range ids {
		refs = append(refs, fmt.Sprintf(`{"source":"artifact","correlationId":%q}`, id))
	}
	return tc(policy.ToolComposeReport, fmt.Sprintf(`{"claims":[{"text":%q,"evidence":[%s]}]}`, text, strings.Join(refs, ",")))
}

func readCall(sql string) contracts.ModelToolCall {
	return tc(policy.ToolRunReadQuery, fmt.Sprintf(`{"sql":%q,"reason":null}`, sql))
}

// refusedOf lists the run's tool-refused payloads, in order.
func refusedOf(entries []contracts.Entry) []*contracts.ToolRefused {
	var out []*contracts.ToolRefused
	for _, e := range entries {
		if e.Kind == contracts.KindToolRefused {
			if p, err := e.Decode(); err == nil {
				out = append(out, p.(*contracts.ToolRefused))
			}
		}
	}
	return out
}

func wantContains(t *testing.T, what, text string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(text, p) {
			t.Errorf("%s lacks %q:\n%s", what, p, text)
		}
	}
}

// TestSameTurnCitationIsRefused: issue 18 item 1 reproduced — turn 1
// carries a read and a report citing it; the model never saw the rows, so
// the report is refused, saying why and what is citable now, and the same
// report a turn later, stating the figure the rows showed, answers.
func TestSameTurnCitationIsRefused(t *testing.T) {
	h := newHarness(t, Config{})
	liar := reportCiting("Rock sells best, with 999.99 in revenue", "r1")
	h.model.script = turns(
		[]contracts.ModelToolCall{readCall("SELECT genre, revenue FROM sales"), liar},
		one(reportCiting("Rock sells best, with 826.65 in revenue", "r1")),
	)
	h.exec.answer = func(n int, req contracts.ExecRequest) (contracts.ExecReply, error) {
		return h.stored(t, req, []string{"genre", "revenue"}, [][]any{{"Rock", 826.65}, {"Jazz", 120.5}}, nil, true), nil
	}
	entries, rec, err := h.drive(t, "same-turn", nil)
	if err != nil {
		t.Fatal(err)
	}
	refused := refusedOf(entries)
	if len(refused) != 1 || refused[0].Code != refuseUnseen || refused[0].Turn != 1 {
		t.Fatalf("refusals %+v, want one evidence_unseen on turn 1", refusals(rec))
	}
	wantContains(t, "the refusal", refused[0].Content,
		"r1 was read in this same turn: you have not seen its rows yet; it becomes citable next turn",
		"Citable in this run: schema (the schema snapshot: structure only).",
		"citable from your next turn once you have read them: r1 (run_read_query, 2 rows)")
	if strings.Contains(refused[0].Content, "Citable in this run: r1") {
		t.Errorf("an unseen result is listed as citable now: %s", refused[0].Content)
	}
	if rec.Status != contracts.StatusSucceeded || rec.Spent.Turns != 2 || len(rec.Report) != 1 ||
		rec.GoalVerdict == nil || rec.GoalVerdict.Outcome != contracts.VerdictAnswered {
		t.Fatalf("status %s turns %d report %+v verdict %+v", rec.Status, rec.Spent.Turns, rec.Report, rec.GoalVerdict)
	}
}

// TestSameTurnRuleHoldsForEveryCitingTool: the class, not the instance —
// recommend_change's evidence and present_answer's artifact are refused
// the same way in the turn that produced them, and accepted the turn
// after; the schema snapshot is shown before turn 1 and citable on it;
// compare_plans, which states nothing of the model's, may name plans read
// in its own turn.
func TestSameTurnRuleHoldsForEveryCitingTool(t *testing.T) {
	t.Run("recommend_change and compare_plans", func(t *testing.T) {
		h := newHarness(t, Config{})
		planOf := func(sql string) contracts.ModelToolCall {
			return tc(policy.ToolInspectPlan, fmt.Sprintf(`{"sql":%q,"reason":null,"hypotheticalIndex":null}`, sql))
		}
		recommend := tc(policy.ToolRecommendChange, `{"kind":"index","statement":"CREATE INDEX i ON invoice (customer_id)","rationale":"the plan scans","evidence":[{"source":"artifact","correlationId":"r1"}]}`)
		h.model.script = turns(
			[]contracts.ModelToolCall{planOf("SELECT * FROM invoice WHERE customer_id = 4"), planOf("SELECT * FROM invoice WHERE customer_id = 4 LIMIT 5"),
				tc(policy.ToolComparePlans, `{"before":"r1","after":"r2"}`), recommend},
			[]contracts.ModelToolCall{recommend},
			one(reportCiting("An index on customer_id removes the scan", "r1")),
		)
		h.exec.answer = func(n int, req contracts.ExecRequest) (contracts.ExecReply, error) {
			plan := scanPlan
			if n == 1 {
				plan = indexPlan
			}
			return h.stored(t, req, []string{"QUERY PLAN"}, [][]any{{"[]"}}, plan, true), nil
		}
		entries, rec := h.driveWorkflow(t, "rec-same-turn", contracts.WorkflowQueryOptimization, false, contracts.EnginePostgres)
		refused := refusedOf(entries)
		if len(refused) != 1 || refused[0].Code != refuseUnseen || refused[0].Tool != policy.ToolRecommendChange {
			t.Fatalf("refusals %v, want the same-turn recommendation's evidence_unseen", refusalCodes(t, entries))
		}
		wantContains(t, "the refusal", refused[0].Content, "r1 was produced by inspect_plan in this same turn", "citable from your next turn")
		if len(rec.Comparisons) != 1 || len(rec.Recommendations) != 1 || rec.Recommendations[0].Turn != 2 {
			t.Fatalf("comparisons %d recommendations %+v", len(rec.Comparisons), rec.Recommendations)
		}
		if v := rec.GoalVerdict; v == nil || v.Outcome != contracts.VerdictAnswered {
			t.Errorf("verdict %+v", v)
		}
	})
	t.Run("present_answer", func(t *testing.T) {
		h := newHarness(t, Config{})
		present := tc(policy.ToolPresentAnswer, `{"artifact":"r1","presentation":{"kind":"table","spec":null}}`)
		h.model.script = turns(
			[]contracts.ModelToolCall{readCall("SELECT country, total FROM sales"), present},
			one(present),
			one(reportCiting("Sales per country, as presented", "r1", "schema")),
		)
		h.exec.answer = func(n int, req contracts.ExecRequest) (contracts.ExecReply, error) {
			return h.stored(t, req, []string{"country", "total"}, [][]any{{"FR", 3.0}, {"DE", 2.0}}, nil, true), nil
		}
		entries, rec := h.driveWorkflow(t, "answer-same-turn", contracts.WorkflowDataAnalysis, false, contracts.EngineSQLite)
		refused := refusedOf(entries)
		if len(refused) != 1 || refused[0].Code != refuseUnseen || refused[0].Tool != policy.ToolPresentAnswer {
			t.Fatalf("refusals %v, want the same-turn answer's evidence_unseen", refusalCodes(t, entries))
		}
		wantContains(t, "the refusal", refused[0].Content, "r1 was read in this same turn")
		if rec.Answer == nil || rec.Answer.Turn != 2 || rec.GoalVerdict == nil || rec.GoalVerdict.Outcome != contracts.VerdictAnswered {
			t.Fatalf("answer %+v verdict %+v", rec.Answer, rec.GoalVerdict)
		}
	})
	t.Run("the snapshot on turn 1", func(t *testing.T) {
		h := newHarness(t, Config{})
		h.model.script = turns(one(reportCiting("The database holds a table t with a column n", "schema")))
		_, rec, err := h.drive(t, "snapshot-turn-1", nil)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Status != contracts.StatusSucceeded || len(rec.Report) != 1 || len(refusals(rec)) != 0 {
			t.Fatalf("status %s report %+v refusals %v", rec.Status, rec.Report, refusals(rec))
		}
	})
}

// TestComposeReportChecksItsClaims pins compose_report's own checks: each
// bad report below carries exactly one fault, the run goes on after each
// refusal, and only the last, sound report is recorded. A check removed
// lets its report through and ends the run early.
func TestComposeReportChecksItsClaims(t *testing.T) {
	h := newHarness(t, Config{})
	h.model.script = turns(
		one(readCall("SELECT count(*) FROM invoice")),
		one(tc(policy.ToolComposeReport, `{"claims":[]}`)),
		one(tc(policy.ToolComposeReport, `{"claims":[{"text":"  ","evidence":[{"source":"artifact","correlationId":"r1"}]}]}`)),
		one(tc(policy.ToolComposeReport, `{"claims":[{"text":"The invoices as counted","evidence":[]}]}`)),
		one(reportCiting("The invoices as counted", "r9")),
		one(reportCiting("The invoices as counted", "r1")),
	)
	entries, rec, err := h.drive(t, "report-checks", nil)
	if err != nil {
		t.Fatal(err)
	}
	refused := refusedOf(entries)
	want := []string{
		"the report has no claims",
		"claim 1 has no text",
		"claim 1 cites no evidence",
		`claim 1 cites {"source":"artifact","correlationId":"r9"}, which this run did not produce`,
	}
	if len(refused) != len(want) {
		t.Fatalf("refusals %v, want %d", refusalCodes(t, entries), len(want))
	}
	for i, r := range refused {
		if r.Code != refuseUnresolved || r.Reason != want[i] {
			t.Errorf("refusal %d: %s %q, want %s %q", i+1, r.Code, r.Reason, refuseUnresolved, want[i])
		}
		wantContains(t, "the refusal", r.Content, citationRule, "Citable in this run: r1 (run_read_query, 1 row)")
	}
	if rec.Status != contracts.StatusSucceeded || len(rec.Report) != 1 || rec.Report[0].Text != "The invoices as counted" || rec.Spent.Turns != 6 {
		t.Fatalf("status %s turns %d report %+v", rec.Status, rec.Spent.Turns, rec.Report)
	}
}

// gateCase is one specialist habit: the run's workflow and calls, the
// refusal its first report must get (words it must say), and how the run
// must end.
type gateCase struct {
	name     string
	workflow contracts.WorkflowType
	script   [][]contracts.ModelToolCall
	answer   func(n int) ([]string, [][]any, *contracts.PlanSummary)
	// says are the words of each report_incomplete refusal, in order.
	says    [][]string
	outcome contracts.VerdictOutcome
	unmet   []string
}

// TestReportThatWouldBeUnansweredIsRefusedOnce: issue 18 item 4 reproduced
// for each specialist habit. The first report that would end the run
// unanswered is refused, naming the missing step with the run's own ids; a
// model that mends it answers; one that sends the same shortfall again is
// recorded and ends with the verdict it earns. A new shortfall is refused
// once too.
func TestReportThatWouldBeUnansweredIsRefusedOnce(t *testing.T) {
	rows := func(n int) ([]string, [][]any, *contracts.PlanSummary) {
		return []string{"genre", "revenue"}, [][]any{{"Rock", 826.65}, {"Jazz", 120.5}}, nil
	}
	plans := func(n int) ([]string, [][]any, *contracts.PlanSummary) {
		if n == 0 {
			return []string{"count"}, [][]any{{412.0}}, nil
		}
		return []string{"QUERY PLAN"}, [][]any{{"[]"}}, scanPlan
	}
	profile := tc(policy.ToolProfileTable, `{"table":"t","depth":null,"fromColumn":null}`)
	cases := []gateCase{{
		name: "data-analysis without present_answer, then corrects", workflow: contracts.WorkflowDataAnalysis, answer: rows,
		script: [][]contracts.ModelToolCall{
			one(readCall("SELECT genre, revenue FROM sales")),
			one(reportCiting("Rock sells best", "r1")),
			one(tc(policy.ToolPresentAnswer, `{"artifact":"r1","presentation":{"kind":"table","spec":null}}`)),
			one(reportCiting("Rock sells best", "r1")),
		},
		says:    [][]string{{"this data-analysis run has presented no answer", "call present_answer with r1 — the result that IS the answer — then compose_report citing r1"}},
		outcome: contracts.VerdictAnswered,
	}, {
		name: "data-analysis without present_answer, insists", workflow: contracts.WorkflowDataAnalysis, answer: rows,
		script: [][]contracts.ModelToolCall{
			one(readCall("SELECT genre, revenue FROM sales")),
			one(reportCiting("Rock sells best", "r1")),
			one(reportCiting("Rock sells best, really", "r1")),
		},
		says:    [][]string{{"presented no answer"}},
		outcome: contracts.VerdictUnanswered, unmet: []string{"no-answer"},
	}, {
		name: "data-analysis: each new shortfall is told once", workflow: contracts.WorkflowDataAnalysis, answer: rows,
		script: [][]contracts.ModelToolCall{
			one(readCall("SELECT genre, revenue FROM sales")),
			one(readCall("SELECT genre FROM sales")),
			one(reportCiting("Rock sells best", "r2")),
			one(tc(policy.ToolPresentAnswer, `{"artifact":"r1","presentation":{"kind":"table","spec":null}}`)),
			one(reportCiting("Rock sells best of the genres", "r2")),
			one(reportCiting("Rock sells best of all genres", "r2")),
		},
		says: [][]string{{"call present_answer with r2"},
			{"no claim cites the presented answer r1", "cite r1 in at least one claim"}},
		outcome: contracts.VerdictUnanswered, unmet: []string{"answer-uncited"},
	}, {
		// The first report arrives fenced, with prose after (kept as a
		// JSON string): what it was told is still read back, so the new
		// shortfall of the next report is told too.
		name: "a fenced report, then a new shortfall", workflow: contracts.WorkflowDataAnalysis, answer: rows,
		script: [][]contracts.ModelToolCall{
			one(readCall("SELECT genre, revenue FROM sales")),
			one(readCall("SELECT genre FROM sales")),
			one(tc(policy.ToolComposeReport, "```json\n"+`{"claims":[{"text":"Rock sells best","evidence":[{"source":"artifact","correlationId":"r2"}]}]}`+"\n```\nThat is my report.")),
			one(tc(policy.ToolPresentAnswer, `{"artifact":"r1","presentation":{"kind":"table","spec":null}}`)),
			one(reportCiting("Rock sells best of the genres", "r2")),
			one(reportCiting("Rock sells best of all genres", "r2")),
		},
		says:    [][]string{{"call present_answer with r2"}, {"no claim cites the presented answer r1"}},
		outcome: contracts.VerdictUnanswered, unmet: []string{"answer-uncited"},
	}, {
		name: "an honest could-not-be-read", workflow: contracts.WorkflowInvestigation,
		answer: func(int) ([]string, [][]any, *contracts.PlanSummary) { return nil, nil, nil }, // every read fails
		script: [][]contracts.ModelToolCall{
			one(readCall("SELECT genre, revenue FROM sales")),
			one(reportCiting("The revenue per genre could not be read: the statement failed", "schema")),
			one(reportCiting("The revenue per genre could not be read: the statement failed", "schema")),
		},
		says:    [][]string{{"the report says the data could not be read, so the objective is not answered", "send the report again as it is and the run ends unanswered"}},
		outcome: contracts.VerdictUnanswered, unmet: []string{"data-unread"},
	}, {
		name: "a report resting on empty results", workflow: contracts.WorkflowInvestigation,
		answer: func(int) ([]string, [][]any, *contracts.PlanSummary) { return []string{"genre"}, [][]any{}, nil },
		script: [][]contracts.ModelToolCall{
			one(readCall("SELECT genre FROM sales WHERE revenue < 0")),
			one(reportCiting("No genre has negative revenue", "r1")),
			one(reportCiting("No genre has negative revenue", "r1")),
		},
		says:    [][]string{{"every result the claims cite holds no rows", "cite, beside the empty reading, one that shows what does exist"}},
		outcome: contracts.VerdictUnanswered, unmet: []string{"empty-evidence"},
	}, {
		name: "a made-up figure, kept", workflow: contracts.WorkflowInvestigation, answer: rows,
		script: [][]contracts.ModelToolCall{
			one(readCall("SELECT genre, revenue FROM sales")),
			one(reportCiting("Rock sells best, with 999.99 in revenue", "r1")),
			one(reportCiting("Rock sells best, with 999.99 in revenue", "r1")),
		},
		says:    [][]string{{`claim 1 states "999.99", found in none of the results it cites (r1) nor derived from them`, "state each figure as the cited rows show it"}},
		outcome: contracts.VerdictUnanswered, unmet: []string{"figure-unverified"},
	}, {
		name: "a made-up figure, mended", workflow: contracts.WorkflowInvestigation, answer: rows,
		script: [][]contracts.ModelToolCall{
			one(readCall("SELECT genre, revenue FROM sales")),
			one(reportCiting("Rock sells best, with 999.99 in revenue", "r1")),
			one(reportCiting("Rock sells best, with 826.65 in revenue", "r1")),
		},
		says:    [][]string{{`"999.99"`}},
		outcome: contracts.VerdictAnswered,
	}, {
		name: "data stated from the schema alone", workflow: contracts.WorkflowInvestigation,
		script: [][]contracts.ModelToolCall{
			one(reportCiting("Rock is the best-selling genre with 826.65", "schema")),
			one(reportCiting("Rock is the best-selling genre with 826.65", "schema")),
		},
		says:    [][]string{{"the claims about data cite only the schema snapshot, which shows the database's structure, not its data", "if it cannot be read, say so"}},
		outcome: contracts.VerdictUnanswered, unmet: []string{"figure-unverified", "schema-only"},
	}, {
		name: "recommendation citing a read, then the plan", workflow: contracts.WorkflowQueryOptimization, answer: plans,
		script: [][]contracts.ModelToolCall{
			one(readCall("SELECT count(*) FROM invoice")),
			one(tc(policy.ToolInspectPlan, `{"sql":"SELECT * FROM invoice WHERE customer_id = 4","reason":null,"hypotheticalIndex":null}`)),
			one(tc(policy.ToolRecommendChange, `{"kind":"index","statement":"CREATE INDEX i ON invoice (customer_id)","rationale":"412 rows","evidence":[{"source":"artifact","correlationId":"r1"}]}`)),
			one(reportCiting("An index on customer_id helps", "r1", "r2")),
			one(tc(policy.ToolRecommendChange, `{"kind":"index","statement":"CREATE INDEX i ON invoice (customer_id)","rationale":"the plan scans invoice","evidence":[{"source":"artifact","correlationId":"r2"}]}`)),
			one(reportCiting("An index on customer_id removes the scan", "r2")),
		},
		says:    [][]string{{"the index recommendation cites no plan: it cites r1, none of them an inspect_plan result", "citing the inspect_plan result that shows the scan the index removes (r2)"}},
		outcome: contracts.VerdictAnswered,
	}, {
		name: "optimization resting on a read, not the plan", workflow: contracts.WorkflowQueryOptimization, answer: plans,
		script: [][]contracts.ModelToolCall{
			one(readCall("SELECT count(*) FROM invoice")),
			one(tc(policy.ToolInspectPlan, `{"sql":"SELECT * FROM invoice WHERE customer_id = 4","reason":null,"hypotheticalIndex":null}`)),
			one(reportCiting("The query reads invoice", "r1")),
			one(reportCiting("The query reads invoice", "r1")),
		},
		says: [][]string{{"compared no plans and recommended no index", "compare_plans it with r2", "recommend a change citing r2",
			"report that no change is needed, citing r2"}},
		outcome: contracts.VerdictUnanswered, unmet: []string{"no-plan-comparison"},
	}, {
		// The honest ending: the plan is already good, no change is
		// recommended, and the report cites the plan that shows it.
		name: "optimization: no change needed, citing the plan", workflow: contracts.WorkflowQueryOptimization,
		answer: func(n int) ([]string, [][]any, *contracts.PlanSummary) {
			return []string{"QUERY PLAN"}, [][]any{{"[]"}}, indexPlan
		},
		script: [][]contracts.ModelToolCall{
			one(tc(policy.ToolInspectPlan, `{"sql":"SELECT * FROM invoice WHERE customer_id = 4","reason":null,"hypotheticalIndex":null}`)),
			one(reportCiting("The plan already uses the index invoice_customer_idx: no change is needed", "r1")),
		},
		outcome: contracts.VerdictAnswered,
	}, {
		name: "assessment without profile_table, then profiles", workflow: contracts.WorkflowDatabaseAssessment,
		answer: func(n int) ([]string, [][]any, *contracts.PlanSummary) {
			return []string{"column", "present"}, [][]any{{"n", 1.0}}, nil
		},
		script: [][]contracts.ModelToolCall{
			one(reportCiting("The table t has one column", "schema")),
			one(profile),
			one(reportCiting("The table t has one column, always present", "r1")),
		},
		says:    [][]string{{"this run profiled no table", "call profile_table on a table the report is about: t"}},
		outcome: contracts.VerdictAnswered,
	}, {
		name: "operations with no reading", workflow: contracts.WorkflowOperations,
		script: [][]contracts.ModelToolCall{
			one(reportCiting("The tables exist", "schema")),
			one(reportCiting("The tables exist", "schema")),
		},
		says:    [][]string{{"the report cites no reading this run took", "take a reading with inspect_operations (kinds: sessions"}},
		outcome: contracts.VerdictUnanswered, unmet: []string{"no-reading"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			h.model.script = turns(c.script...)
			h.exec.answer = func(n int, req contracts.ExecRequest) (contracts.ExecReply, error) {
				cols, data, plan := c.answer(n)
				if cols == nil {
					return failReply(5), nil
				}
				r := h.stored(t, req, cols, data, plan, true)
				if req.Table != "" {
					r.Profile = &contracts.TableProfile{Table: contracts.NameRef{Name: req.Table}, Depth: contracts.DepthBasic, Rows: 1,
						Columns: []contracts.ColumnProfile{{Name: "n", Present: 1}}}
				}
				return r, nil
			}
			entries, rec := h.driveWorkflow(t, "gate", c.workflow, false, contracts.EngineSQLite)
			var told []*contracts.ToolRefused
			for _, r := range refusedOf(entries) {
				if r.Code != refuseIncomplete {
					t.Errorf("refused %s: %s", r.Code, r.Content)
					continue
				}
				told = append(told, r)
			}
			if len(told) != len(c.says) {
				t.Fatalf("%d report_incomplete refusals, want %d: %v", len(told), len(c.says), refusalCodes(t, entries))
			}
			for i, r := range told {
				if r.Tool != policy.ToolComposeReport {
					t.Errorf("refusal %d of %s", i+1, r.Tool)
				}
				t.Log(r.Content)
				wantContains(t, "the refusal", r.Content, c.says[i]...)
				wantContains(t, "the refusal", r.Content, "Sent again with the same shortfall, the report is recorded and the run ends unanswered.")
			}
			v := rec.GoalVerdict
			if rec.Status != contracts.StatusSucceeded || rec.StopReason != contracts.StopReportComposed || v == nil || v.Outcome != c.outcome ||
				strings.Join(v.Unmet, ",") != strings.Join(c.unmet, ",") {
				t.Fatalf("status %s stop %s verdict %+v, want %s %v", rec.Status, rec.StopReason, v, c.outcome, c.unmet)
			}
			if n := len(c.script); rec.Spent.Turns != n {
				t.Errorf("turns %d, want every one of the script's %d", rec.Spent.Turns, n)
			}
		})
	}
}

// TestALastTurnReportIsRecordedAsItStands: a refusal gives the model a turn
// to mend its report; on the run's last turn there is none, so a report
// citing a same-turn read, or one with a shortfall, is recorded and judged
// as it stands rather than lost.
func TestALastTurnReportIsRecordedAsItStands(t *testing.T) {
	liar := reportCiting("Rock sells best, with 999.99 in revenue", "r1")
	for _, c := range []struct {
		name   string
		turns  int
		script [][]contracts.ModelToolCall
		unmet  string
	}{
		{"same-turn citation", 1, [][]contracts.ModelToolCall{{readCall("SELECT genre, revenue FROM sales"), liar}}, "unseen-evidence"},
		{"made-up figure", 2, [][]contracts.ModelToolCall{one(readCall("SELECT genre, revenue FROM sales")), one(liar)}, "figure-unverified"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			h.model.script = turns(c.script...)
			h.exec.answer = func(n int, req contracts.ExecRequest) (contracts.ExecReply, error) {
				return h.stored(t, req, []string{"genre", "revenue"}, [][]any{{"Rock", 826.65}}, nil, true), nil
			}
			_, rec, err := h.drive(t, "last-turn", func(b *contracts.Budget) { b.MaxTurns = c.turns })
			if err != nil {
				t.Fatal(err)
			}
			v := rec.GoalVerdict
			if len(refusals(rec)) != 0 || len(rec.Report) != 1 || rec.StopReason != contracts.StopReportComposed ||
				v == nil || v.Outcome != contracts.VerdictUnanswered || !slices.Contains(v.Unmet, c.unmet) {
				t.Fatalf("refusals %v stop %s report %+v verdict %+v, want the report recorded, unanswered %s", refusals(rec), rec.StopReason, rec.Report, v, c.unmet)
			}
		})
	}
}
