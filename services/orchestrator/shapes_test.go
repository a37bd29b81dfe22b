package orchestrator

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
)

// The argument shapes of issue 18 (item 9) through the run loop: read,
// recorded verbatim with notes saying how, and the ambiguous ones refused;
// the refusal texts of item 12 (the dialect with an unreadable statement,
// the run's own ids in a fix).

// entriesOf decodes the run's entries of one kind.
func entriesOf[T any](t *testing.T, entries []contracts.Entry, kind contracts.EventKind) []*T {
	t.Helper()
	var out []*T
	for _, e := range entries {
		if e.Kind != kind {
			continue
		}
		p, err := e.Decode()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p.(*T))
	}
	return out
}

func hasAll(t *testing.T, what string, notes []string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(notes, w) {
			t.Errorf("%s: notes %q lack %q", what, notes, w)
		}
	}
}

// TestShapesAreReadThroughARun: a read named "Functions.Run_Read_Query"
// whose arguments come in a ```json fence with prose after, its statement in
// a ```sql fence and its reason "None", then a report wrapped as
// {"name","arguments"} with the arguments double-encoded, citing "R1" under
// source "result": the run answers in two turns, the executor is asked the
// bare statement, and each entry keeps the arguments verbatim and notes
// every reading.
func TestShapesAreReadThroughARun(t *testing.T) {
	h := newHarness(t, Config{})
	readRaw := "```json\n{\"sql\":\"```sql\\nSELECT n FROM t\\n```\",\"reason\":\"None\"}\n```\nReading the count now."
	reportArgs := `{"claims":[{"text":"The table t holds its rows.","evidence":[{"source":"result","correlationId":"R1"}]}]}`
	b, _ := json.Marshal(reportArgs)
	reportRaw := `{"name":"compose_report","arguments":` + string(b) + `} That is the report.`
	h.model.script = calls(
		contracts.ModelToolCall{Name: "Functions.Run_Read_Query", Arguments: readRaw},
		contracts.ModelToolCall{Name: "COMPOSE_REPORT", Arguments: reportRaw},
	)
	entries, rec, err := h.drive(t, "shapes", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != contracts.StatusSucceeded || rec.Spent.Turns != 2 || len(refusals(rec)) != 0 {
		for _, r := range entriesOf[contracts.ToolRefused](t, entries, contracts.KindToolRefused) {
			t.Log(r.Tool, r.Content)
		}
		t.Fatalf("status %s in %d turns, refusals %v", rec.Status, rec.Spent.Turns, refusals(rec))
	}
	if got := h.exec.stepCalls(stepOf("SELECT n FROM t")); len(got) != 1 || got[0].req.SQL != "SELECT n FROM t" {
		t.Fatalf("the executor was asked %+v, want the bare statement once", got)
	}
	inv := entriesOf[contracts.ToolInvoked](t, entries, contracts.KindToolInvoked)
	if len(inv) != 1 || inv[0].Tool != policy.ToolRunReadQuery {
		t.Fatalf("invocations %+v", inv)
	}
	var sent string
	if json.Unmarshal(inv[0].Arguments, &sent) != nil || sent != readRaw {
		t.Errorf("the read's arguments are not kept verbatim: %s", inv[0].Arguments)
	}
	hasAll(t, "read", inv[0].Normalised,
		`tool "Functions.Run_Read_Query" read as "run_read_query"`,
		noteFence, noteProse,
		`"sql": the `+"```sql"+` fence around the statement taken off`,
		`"reason": the string "None" read as null`)
	rep := entriesOf[contracts.ReportComposed](t, entries, contracts.KindReportComposed)
	if len(rep) != 1 || rep[0].Tool != policy.ToolComposeReport {
		t.Fatalf("reports %+v", rep)
	}
	if json.Unmarshal(rep[0].Arguments, &sent) != nil || sent != reportRaw {
		t.Errorf("the report's arguments are not kept verbatim: %s", rep[0].Arguments)
	}
	if ev := rep[0].Claims[0].Evidence; len(ev) != 1 || ev[0] != (contracts.EvidenceRef{Source: contracts.EvidenceArtifact, CorrelationID: "r1"}) {
		t.Errorf("the claim cites %+v", ev)
	}
	hasAll(t, "report", rep[0].Normalised,
		`tool "COMPOSE_REPORT" read as "compose_report"`,
		`arguments sent inside a {"name","arguments"} wrapper`, noteString, noteProse,
		`evidence 1.1: "R1" read as "r1"`,
		`evidence 1.1: source "result" read as "artifact"`)
	// The model is shown its calls under the tools' own names.
	msgs := transcript(entries, "")
	var names []string
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			names = append(names, c.Name)
		}
	}
	if strings.Join(names, ",") != "run_read_query,compose_report" {
		t.Errorf("the transcript names the calls %v", names)
	}
}

// TestAnUnresolvedIDIsRefusedByItsID: a reference under any source whose id
// is no result of this run is refused by its id, listing what is citable;
// the source is not what the refusal blames.
func TestAnUnresolvedIDIsRefusedByItsID(t *testing.T) {
	h := newHarness(t, Config{})
	h.model.script = calls(
		tc(policy.ToolRunReadQuery, `{"sql":"SELECT n FROM t","reason":null}`),
		tc(policy.ToolComposeReport, `{"claims":[{"text":"The table t holds its rows.","evidence":[{"source":"result","correlationId":"r9"}]}]}`),
		tc(policy.ToolComposeReport, `{"claims":[{"text":"The table t holds its rows.","evidence":[{"source":"query","id":"r1"}]}]}`),
	)
	entries, rec, err := h.drive(t, "unresolved", nil)
	if err != nil {
		t.Fatal(err)
	}
	refs := entriesOf[contracts.ToolRefused](t, entries, contracts.KindToolRefused)
	if len(refs) != 1 || refs[0].Code != refuseUnresolved {
		t.Fatalf("refusals %+v", refs)
	}
	r := refs[0]
	if !strings.Contains(r.Reason, `"correlationId":"r9"`) || strings.Contains(r.Reason, `"result"`) ||
		!strings.Contains(r.Content, "Citable in this run: r1 (run_read_query, 1 row)") {
		t.Errorf("the refusal does not blame the id and list the citable ones: %s", r.Content)
	}
	if rec.Status != contracts.StatusSucceeded {
		t.Errorf("status %s", rec.Status)
	}
	rep := entriesOf[contracts.ReportComposed](t, entries, contracts.KindReportComposed)
	if len(rep) != 1 {
		t.Fatalf("reports %+v", rep)
	}
	hasAll(t, "report", rep[0].Normalised, `evidence 1.1: source "query" read as "artifact"`)
}

// TestAmbiguousShapesAreRefusedThroughARun: a wrapper naming another tool,
// a statement fenced with a second one, two JSON objects: each refused as
// invalid_arguments with a fix, nothing reaching the executor.
func TestAmbiguousShapesAreRefusedThroughARun(t *testing.T) {
	h := newHarness(t, Config{})
	h.model.script = calls(
		tc(policy.ToolRunReadQuery, `{"name":"compose_report","parameters":{"claims":[]}}`),
		tc(policy.ToolRunReadQuery, `{"sql":"`+"```sql\\nSELECT 1;\\nDELETE FROM t\\n```"+`","reason":null}`),
		tc(policy.ToolRunReadQuery, `{"sql":"SELECT 1"} {"sql":"SELECT 2"}`),
	)
	entries, _, err := h.drive(t, "ambiguous", nil)
	if err != nil {
		t.Fatal(err)
	}
	refs := entriesOf[contracts.ToolRefused](t, entries, contracts.KindToolRefused)
	if len(refs) != 3 {
		t.Fatalf("refusals %+v", refs)
	}
	for i, want := range []string{"call compose_report itself", "holds 2 statements in its ```sql fence; send one statement", "more than one JSON value"} {
		if refs[i].Code != refuseInvalidArguments || !strings.Contains(refs[i].Reason, want) || refs[i].Fix == "" {
			t.Errorf("refusal %d: %s %q (want %q and a fix)", i+1, refs[i].Code, refs[i].Reason, want)
		}
	}
	if n := h.exec.readCount(); n != 0 {
		t.Errorf("the executor was asked %d times", n)
	}
}

// TestUnreadableStatementsCarryTheDialect: the guard's unparsable and
// engine_parse refusals reach the model with the engine's dialect, once;
// other refusals without it.
func TestUnreadableStatementsCarryTheDialect(t *testing.T) {
	h := newHarness(t, Config{})
	h.model.script = reads("SELECT TOP 5 n FROM t", "SELECT n FROM t WHERE", "DELETE FROM t")
	codes := []contracts.Code{contracts.RefuseUnparsable, contracts.RefuseEngineParse, contracts.RefuseNotASelect}
	h.exec.answer = func(n int, req contracts.ExecRequest) (contracts.ExecReply, error) {
		return contracts.ExecReply{Status: contracts.ExecRefused, Refusal: &contracts.Refusal{Code: codes[n], Message: "the guard's reason", Fix: "the guard's fix"}}, nil
	}
	entries, _, err := h.drive(t, "dialect", nil)
	if err != nil {
		t.Fatal(err)
	}
	refs := entriesOf[contracts.ToolRefused](t, entries, contracts.KindToolRefused)
	if len(refs) != 3 {
		t.Fatalf("refusals %+v", refs)
	}
	hint := dialectHint(contracts.EngineSQLite)
	if !strings.Contains(hint, "SQLite syntax: LIMIT n, not TOP") {
		t.Fatalf("the SQLite hint reads %q", hint)
	}
	for i, r := range refs {
		want := 1
		if r.Code == contracts.RefuseNotASelect {
			want = 0
		}
		if got := strings.Count(r.Content, "SQLite syntax:"); got != want || !strings.Contains(r.Content, "How to fix: the guard's fix") {
			t.Errorf("refusal %d (%s) says the dialect %d times, want %d: %s", i+1, r.Code, got, want, r.Content)
		}
	}
}

// TestFixesNameTheRunsOwnIDs: the fixes of compare_plans, recommend_change
// and present_answer give the ids this run produced, never a made-up one;
// a comparison of plans named "R1" is recorded with the note.
func TestFixesNameTheRunsOwnIDs(t *testing.T) {
	h := newHarness(t, Config{})
	plan := func(sql string) contracts.ModelToolCall {
		return tc(policy.ToolInspectPlan, `{"sql":"`+sql+`","reason":null,"hypotheticalIndex":null}`)
	}
	h.model.script = calls(
		tc(policy.ToolComparePlans, `{"before":"r1"}`),                                      // no plan yet
		plan("SELECT * FROM invoice WHERE customer_id = 4"),                                 // r1
		tc(policy.ToolComparePlans, `{"after":"r1"}`),                                       // one plan
		tc(policy.ToolRunReadQuery, `{"sql":"SELECT count(*) FROM invoice","reason":null}`), // r2
		plan("SELECT * FROM invoice WHERE customer_id = 4 LIMIT 5"),                         // r3
		tc(policy.ToolComparePlans, `{"before":null,"after":"r1"}`),                         // two plans (a loop of one call is stopped)
		tc(policy.ToolRecommendChange, `{"kind":"index"}`),
		tc(policy.ToolComparePlans, `{"before":"R1","after":"r 3"}`),
		tc(policy.ToolComposeReport, `{"claims":[{"text":"the rewrite uses the index","evidence":[{"source":"artifact","correlationId":"r3"}]}]}`),
	)
	h.exec.answer = func(n int, req contracts.ExecRequest) (contracts.ExecReply, error) {
		switch n {
		case 0:
			return h.stored(t, req, []string{"QUERY PLAN"}, [][]any{{"[]"}}, scanPlan, true), nil
		case 1:
			return h.stored(t, req, []string{"count"}, [][]any{{412.0}}, nil, true), nil
		}
		return h.stored(t, req, []string{"QUERY PLAN"}, [][]any{{"[]"}}, indexPlan, true), nil
	}
	entries, _ := h.driveWorkflow(t, "fixes", contracts.WorkflowQueryOptimization, false, contracts.EnginePostgres)
	refs := entriesOf[contracts.ToolRefused](t, entries, contracts.KindToolRefused)
	if len(refs) < 4 {
		for _, r := range refs {
			t.Log(r.Tool, r.Content)
		}
		t.Fatalf("%d refusals", len(refs))
	}
	for i, want := range []string{
		`send {"before":"<id>","after":"<id>"}: the ids of two inspect_plan results; this run has read no plan yet`,
		`send {"before":"r1","after":"<the id of a second plan>"}: this run has read one plan (r1)`,
		`send {"before":"r1","after":"r3"}: the ids of two inspect_plan results of this run`,
		`"evidence":[{"source":"artifact","correlationId":"r3"}]`,
	} {
		if !strings.Contains(refs[i].Fix, want) {
			t.Errorf("fix %d: %q lacks %q", i+1, refs[i].Fix, want)
		}
		if strings.Contains(refs[i].Fix, `"r4"`) || strings.Contains(refs[i].Fix, `"r2"`) {
			t.Errorf("fix %d names an id that is no plan of this run: %q", i+1, refs[i].Fix)
		}
	}
	cmp := entriesOf[contracts.PlanComparison](t, entries, contracts.KindPlanComparison)
	if len(cmp) != 1 || cmp[0].Before != "r1" || cmp[0].After != "r3" {
		t.Fatalf("comparisons %+v", cmp)
	}
	hasAll(t, "comparison", cmp[0].Normalised, `"before": "R1" read as "r1"`, `"after": "r 3" read as "r3"`)

	// present_answer's fix names the run's read.
	h2 := newHarness(t, Config{})
	h2.model.script = calls(
		tc(policy.ToolRunReadQuery, `{"sql":"SELECT count(*) FROM invoice","reason":null}`), // r1
		tc(policy.ToolPresentAnswer, `{"artifact":"r1"}`),
	)
	h2.exec.answer = func(n int, req contracts.ExecRequest) (contracts.ExecReply, error) {
		return h2.stored(t, req, []string{"count"}, [][]any{{412.0}}, nil, true), nil
	}
	entries, _ = h2.driveWorkflow(t, "answerfix", contracts.WorkflowDataAnalysis, false, contracts.EngineSQLite)
	refs = entriesOf[contracts.ToolRefused](t, entries, contracts.KindToolRefused)
	if len(refs) == 0 || !strings.Contains(refs[0].Fix, `send {"artifact":"r1","presentation"`) {
		t.Fatalf("present_answer's fix: %+v", refs)
	}
}
