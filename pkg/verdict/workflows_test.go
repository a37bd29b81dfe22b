package verdict

import (
	"fmt"
	"slices"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
)

// header opens a ledger of an agent run of workflow w.
func header(t *testing.T, w contracts.WorkflowType) contracts.Entry {
	return entry(t, contracts.KindRunStarted, contracts.RunStarted{Mode: contracts.ModeAgent, WorkflowType: w})
}

// produced is a completed step of tool with one artifact of rows rows.
func produced(t *testing.T, tool, cid string, rows int) contracts.Entry {
	return entry(t, contracts.KindToolCompleted, contracts.ToolCompleted{ToolCall: contracts.ToolCall{Tool: tool}, StepID: cid,
		Outcome: contracts.OutcomeOK, Artifact: &contracts.ArtifactSummary{CorrelationID: cid, Rows: rows}})
}

func plan(t *testing.T, cid string) contracts.Entry {
	return produced(t, policy.ToolInspectPlan, cid, 0) // a plan's row count measures nothing
}

// planAt is a plan the run read, its summary reading each relation as
// access says.
func planAt(t *testing.T, cid string, access ...contracts.AccessKind) contracts.Entry {
	sum := &contracts.PlanSummary{Engine: contracts.EngineSQLite}
	for i, a := range access {
		sum.Access = append(sum.Access, contracts.RelationAccess{Relation: fmt.Sprintf("t%d", i), Access: a})
	}
	return entry(t, contracts.KindToolCompleted, contracts.ToolCompleted{ToolCall: contracts.ToolCall{Tool: policy.ToolInspectPlan}, StepID: cid,
		Outcome: contracts.OutcomeOK, Artifact: &contracts.ArtifactSummary{CorrelationID: cid}, Plan: sum})
}

func recommend(t *testing.T, kind string, refs ...contracts.EvidenceRef) contracts.Entry {
	return entry(t, contracts.KindRecommendation, contracts.Recommendation{Kind: kind, Statement: "s", Rationale: "r", Evidence: refs})
}

// TestSpecialistVerdicts drives every shortfall code of the four specialist
// rules with a ledger that earns it, and the answered case beside it.
func TestSpecialistVerdicts(t *testing.T) {
	qo, da, ops, an := contracts.WorkflowQueryOptimization, contracts.WorkflowDatabaseAssessment, contracts.WorkflowOperations, contracts.WorkflowDataAnalysis
	snapshot := entry(t, contracts.KindContextCaptured, contracts.ContextCaptured{Fingerprint: "f", CorrelationID: "schema"})
	compared := entry(t, contracts.KindPlanComparison, contracts.PlanComparison{Before: "p1", After: "p2"})
	profiled := entry(t, contracts.KindTableProfiled, contracts.TableProfiled{Table: "t", CorrelationID: "r1"})
	answer := func(cid string) contracts.Entry {
		return entry(t, contracts.KindAnswerComposed, contracts.AnswerComposed{CorrelationID: cid, Presentation: contracts.Presentation{Kind: contracts.PresentTable}})
	}
	cases := []struct {
		name     string
		workflow contracts.WorkflowType
		entries  []contracts.Entry
		rule     string
		outcome  contracts.VerdictOutcome
		unmet    []string
	}{
		// query-optimization
		{"qo: comparison answers, plans exempt from emptiness", qo, []contracts.Entry{plan(t, "p1"), plan(t, "p2"), compared, report(t, art("p1"), art("p2"))},
			RuleQueryOptimization, contracts.VerdictAnswered, nil},
		{"qo: index citing the diagnosed plan answers", qo, []contracts.Entry{plan(t, "p1"), recommend(t, contracts.RecommendIndex, art("p1")), report(t, art("p1"))},
			RuleQueryOptimization, contracts.VerdictAnswered, nil},
		{"qo: no report dominates", qo, []contracts.Entry{plan(t, "p1"), compared}, RuleQueryOptimization, contracts.VerdictUnanswered, []string{UnmetNoReport}},
		{"qo: neither comparison nor index nor a plan cited", qo, []contracts.Entry{plan(t, "p1"), produced(t, policy.ToolRunReadQuery, "r2", 4), report(t, art("r2"))},
			RuleQueryOptimization, contracts.VerdictUnanswered, []string{UnmetNoPlanComparison}},
		// The honest "no change needed": no recommendation, and the report
		// rests on the plan read (it already uses an index; or, on DuckDB,
		// the scan is the plan).
		{"qo: no change needed, citing the plan read", qo, []contracts.Entry{planAt(t, "p1", contracts.AccessIndex), produced(t, policy.ToolRunReadQuery, "r2", 4),
			report(t, art("p1"), art("r2"))}, RuleQueryOptimization, contracts.VerdictAnswered, nil},
		{"qo: no change needed on a plan that scans", qo, []contracts.Entry{planAt(t, "p1", contracts.AccessFullScan), report(t, art("p1"))},
			RuleQueryOptimization, contracts.VerdictAnswered, nil},
		{"qo: a rewrite recommended uncompared is no case for no change", qo, []contracts.Entry{planAt(t, "p1", contracts.AccessIndex),
			recommend(t, contracts.RecommendRewrite, art("p1")), report(t, art("p1"))},
			RuleQueryOptimization, contracts.VerdictUnanswered, []string{UnmetNoPlanComparison}},
		{"qo: no change needed needs the plan cited", qo, []contracts.Entry{planAt(t, "p1", contracts.AccessIndex), produced(t, policy.ToolRunReadQuery, "r2", 4), report(t, art("r2"))},
			RuleQueryOptimization, contracts.VerdictUnanswered, []string{UnmetNoPlanComparison}},
		{"qo: a rewrite without a comparison", qo, []contracts.Entry{plan(t, "p1"), recommend(t, contracts.RecommendRewrite, art("p1")), report(t, art("p1"))},
			RuleQueryOptimization, contracts.VerdictUnanswered, []string{UnmetNoPlanComparison}},
		{"qo: index citing a read, not a plan", qo, []contracts.Entry{plan(t, "p1"), produced(t, policy.ToolRunReadQuery, "r2", 4),
			recommend(t, contracts.RecommendIndex, art("r2")), report(t, art("r2"))},
			RuleQueryOptimization, contracts.VerdictUnanswered, []string{UnmetNoPlanEvidence}},
		{"qo: an empty read cited alone is still empty evidence", qo, []contracts.Entry{plan(t, "p1"), produced(t, policy.ToolRunReadQuery, "r2", 0), compared, report(t, art("r2"))},
			RuleQueryOptimization, contracts.VerdictUnanswered, []string{UnmetEmptyEvidence}},
		// database-assessment
		{"da: profiled answers", da, []contracts.Entry{produced(t, policy.ToolProfileTable, "r1", 5), profiled, report(t, art("r1"))},
			RuleDatabaseAssessment, contracts.VerdictAnswered, nil},
		{"da: schema alone", da, []contracts.Entry{snapshot, report(t, art("schema"))}, RuleDatabaseAssessment, contracts.VerdictUnanswered, []string{UnmetNoTableProfile}},
		{"da: no report", da, []contracts.Entry{profiled}, RuleDatabaseAssessment, contracts.VerdictUnanswered, []string{UnmetNoReport}},
		// operations
		{"ops: an empty reading is an answer", ops, []contracts.Entry{produced(t, policy.ToolInspectOperations, "r1", 0), report(t, art("r1"))},
			RuleOperations, contracts.VerdictAnswered, nil},
		{"ops: the snapshot alone is no reading", ops, []contracts.Entry{snapshot, produced(t, policy.ToolInspectOperations, "r1", 3), report(t, art("schema"))},
			RuleOperations, contracts.VerdictUnanswered, []string{UnmetNoReading}},
		{"ops: a citation the run did not produce is no reading", ops, []contracts.Entry{report(t, art("ghost"))},
			RuleOperations, contracts.VerdictUnanswered, []string{UnmetNoReading}},
		{"ops: no report", ops, []contracts.Entry{produced(t, policy.ToolInspectOperations, "r1", 3)}, RuleOperations, contracts.VerdictUnanswered, []string{UnmetNoReport}},
		// data-analysis
		{"an: presented and cited", an, []contracts.Entry{produced(t, policy.ToolRunReadQuery, "r1", 5), answer("r1"), report(t, art("r1"))},
			RuleDataAnalysis, contracts.VerdictAnswered, nil},
		{"an: a one-row table answer", an, []contracts.Entry{produced(t, policy.ToolRunReadQuery, "r1", 1), answer("r1"), report(t, art("r1"))},
			RuleDataAnalysis, contracts.VerdictAnswered, nil},
		{"an: nothing presented", an, []contracts.Entry{produced(t, policy.ToolRunReadQuery, "r1", 5), report(t, art("r1"))},
			RuleDataAnalysis, contracts.VerdictUnanswered, []string{UnmetNoAnswer}},
		{"an: presented one, reported another", an, []contracts.Entry{produced(t, policy.ToolRunReadQuery, "r1", 5), produced(t, policy.ToolRunReadQuery, "r2", 5),
			answer("r2"), report(t, art("r1"))}, RuleDataAnalysis, contracts.VerdictUnanswered, []string{UnmetAnswerUncited}},
		{"an: empty evidence dominates", an, []contracts.Entry{produced(t, policy.ToolRunReadQuery, "r1", 0), answer("r1"), report(t, art("r1"))},
			RuleDataAnalysis, contracts.VerdictUnanswered, []string{UnmetEmptyEvidence}},
	}
	for _, c := range cases {
		v := Verify(append([]contracts.Entry{header(t, c.workflow)}, c.entries...), false)
		if v.Rule != c.rule || v.Outcome != c.outcome || !slices.Equal(v.Unmet, append([]string{}, c.unmet...)) {
			t.Errorf("%s: %+v, want %s %s %v", c.name, v, c.rule, c.outcome, c.unmet)
		}
	}
	for _, w := range []contracts.WorkflowType{qo, da, ops, an} {
		if v := Verify([]contracts.Entry{header(t, w)}, true); v.Outcome != contracts.VerdictCancelled {
			t.Errorf("%s cancelled: %+v", w, v)
		}
	}
}
