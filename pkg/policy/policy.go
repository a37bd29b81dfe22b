// Package policy holds the frozen execution policies: the workflow table —
// one row per workflow with its budget, tools, instructions and verdict
// rules — and the bounds every row shares. The row is always chosen from a
// run's persisted workflow, never from a caller.
package policy

import (
	"github.com/sondehq/sonde/contracts"
)

// Tool names.
const (
	ToolInspectSchema = "inspect_schema"
	ToolRunReadQuery  = "run_read_query"
	ToolInspectPlan   = "inspect_plan"
	ToolComposeReport = "compose_report"
	// query-optimization
	ToolComparePlans    = "compare_plans"
	ToolRecommendChange = "recommend_change"
	// database-assessment and data-analysis
	ToolProfileTable = "profile_table"
	// operations
	ToolInspectOperations = "inspect_operations"
	// data-analysis
	ToolPresentAnswer = "present_answer"
)

// readTools are the read class every statement-sending workflow offers.
var readTools = []string{ToolInspectSchema, ToolRunReadQuery, ToolInspectPlan}

// with is the read class plus more tools, the finishing tool last.
func with(more ...string) []string {
	out := append(append([]string{}, readTools...), more...)
	return append(out, ToolComposeReport)
}

// Shared bounds of every row.
const (
	StatementTimeoutMs = 10_000
	MaxRows            = 200
	MaxBytes           = 256 << 10
	ModelTurnTimeoutMs = 90_000
	MaxRepairs         = 3
	ReportReserveTurns = 2
	ReportReserveMs    = 20_000
)

// Workflow is one row of the workflow table: everything that makes a
// workflow what it is. Adding a workflow is adding a row; a test holds every
// row to having each part.
type Workflow struct {
	// Budget row: the policy version and the run's bounds.
	version            string
	turns, statements  int
	deadlineS, dbTimeS int64
	// Label names the workflow for people (the console's choice of
	// workflow).
	Label string
	// Goal says what a run of the workflow is for, in the rules of both
	// modes.
	Goal string
	// AgentTools are the tools an agent run offers, the finishing tool
	// last; nil while agent runs of the workflow are not driven yet.
	AgentTools []string
	// AgentGuide is what an agent run is told about how this workflow
	// answers, in the rules; each sentence names only tools the row offers.
	AgentGuide string
	// NamesAndIndexes packs the schema snapshot as table names and their
	// indexes only, in the inventory's own order (what an operational
	// reading names), rather than ranked columns and keys.
	NamesAndIndexes bool
	// PlanDeliverable is what a planning run hands the user; PlanIsProse
	// marks a plan that is prose (a fenced statement welcome, never
	// required).
	PlanDeliverable string
	PlanIsProse     bool
	// PlanMayIndex: the plan may instead be one CREATE INDEX on plain
	// columns, a recommendation the user reviews and applies (pkg/verdict
	// judges it by its table and columns, not as a read).
	PlanMayIndex bool
	// AgentRule and PlanRule name the verdict rules that judge the
	// workflow's agent and planning runs (pkg/verdict); AgentRule is empty
	// while AgentTools is.
	AgentRule, PlanRule string
	// PresentsAnswer: an agent run presents one result as the answer;
	// AutoExecute: it may hand that result to the editor.
	PresentsAnswer, AutoExecute bool
}

// Workflows is the workflow table, one row per contracts.WorkflowType.
var Workflows = map[contracts.WorkflowType]Workflow{
	contracts.WorkflowInvestigation: {
		version: "agent-read-only.investigation.1", turns: 36, statements: 30, deadlineS: 450, dbTimeS: 90,
		Label:           "Investigation",
		Goal:            "answer the user's objective from what the database holds",
		AgentTools:      with(),
		AgentGuide:      "Read what the objective needs, then report what the results show.",
		PlanDeliverable: "the one statement whose result answers the objective",
		AgentRule:       "agent-investigation.2", PlanRule: "agent-planning.2",
	},
	contracts.WorkflowQueryOptimization: {
		version: "agent-read-only.query-optimization.1", turns: 36, statements: 30, deadlineS: 450, dbTimeS: 90,
		Label:      "Query optimization",
		Goal:       "make the user's query faster, from its plan and the schema",
		AgentTools: with(ToolComparePlans, ToolRecommendChange),
		AgentGuide: "Read the plan of the user's query with inspect_plan first: it shows how each table is reached (full scan or index) and the engine's estimates. " +
			"For a rewrite, inspect the plan of the rewritten statement too and call compare_plans with the two plan results. " +
			"For an index, call recommend_change with kind \"index\" citing the plan that shows the scan it removes; where the database can plan with a hypothetical index, inspect_plan with hypotheticalIndex shows the plan as if it existed, and compare_plans compares the two. " +
			"Recommendations are recorded for the user and never executed. The answer needs a plan comparison or an index recommendation that cites a plan.",
		PlanDeliverable: "one statement that makes the user's query faster — the rewritten query, or the one index to create, which the user reviews and applies — with why it is faster",
		PlanMayIndex:    true,
		AgentRule:       "agent-query-optimization.4", PlanRule: "agent-planning.2",
	},
	contracts.WorkflowDatabaseAssessment: {
		version: "agent-read-only.database-assessment.1", turns: 48, statements: 45, deadlineS: 630, dbTimeS: 135,
		Label:      "Database assessment",
		Goal:       "assess what is wrong with the database: data quality, keys, indexes",
		AgentTools: with(ToolProfileTable),
		AgentGuide: "Profile the tables that matter with profile_table (the server counts rows, present values and, deeper, distinct values and personal-data shapes; it never reads a value) and weigh its findings: high_null, constant, low_cardinality, suspected_pii, fk_unindexed. " +
			"Check keys and orphans with your own reads. The answer needs at least one table profiled.",
		PlanDeliverable: "the one statement that measures the concern the objective names (nulls, duplicates, orphans, skew)",
		AgentRule:       "agent-database-assessment.2", PlanRule: "agent-planning.2",
	},
	contracts.WorkflowOperations: {
		version: "agent-read-only.operations.2", turns: 20, statements: 18, deadlineS: 360, dbTimeS: 80,
		Label:      "Operations",
		Goal:       "say what is happening on the server right now",
		AgentTools: []string{ToolInspectOperations, ToolRecommendChange, ToolComposeReport},
		AgentGuide: "Take readings with inspect_operations (sessions, slow-queries, table-stats, index-stats, storage, health); you write no SQL in this workflow. " +
			"Each reading is a moment, not a history: it says what the engine reported as it was taken. A kind this engine cannot give is refused; take another. " +
			"An empty reading is an answer (no blocked session, no slow query) and may be cited. Actions that are neither an index nor a rewrite (end a session, vacuum, drop an unused index) go in the report as claims, not as recommendations. " +
			"The answer needs at least one claim citing a reading you took.",
		PlanDeliverable: "a short operational plan in prose: what to look at on the server and in what order; where the engine exposes a reading as a statement you may fence it",
		PlanIsProse:     true,
		NamesAndIndexes: true,
		AgentRule:       "agent-operations.3", PlanRule: "agent-planning.2",
	},
	contracts.WorkflowDataAnalysis: {
		version: "agent-read-only.data-analysis.1", turns: 60, statements: 42, deadlineS: 900, dbTimeS: 180,
		Label:      "Data analysis",
		Goal:       "answer an analytical question with a result shaped for a table or a chart",
		AgentTools: with(ToolProfileTable, ToolPresentAnswer),
		AgentGuide: "Find the table the question is about (profile_table gives row counts and how full each column is without reading values), shape one aggregate whose rows ARE the answer, " +
			"then call present_answer once with that result's id: {\"kind\":\"table\"}, or a chart {\"kind\":\"chart\",\"spec\":{\"type\":\"bar\",\"x\":\"<category column>\",\"y\":[\"<numeric column>\"],\"caption\":\"…\"}} (types bar, line, area, pie, scatter, stacked-bar; several series are several y columns). " +
			"A one-row or non-numeric result is a table. Then compose_report with at least one claim citing the presented result.",
		PlanDeliverable: "the one statement whose result is the answer, shaped for a table or a chart (one row per category or period)",
		AgentRule:       "agent-data-analysis.2", PlanRule: "agent-planning.2",
		PresentsAnswer: true, AutoExecute: true,
	},
}

// Budget returns the budget row of workflow w.
func Budget(w contracts.WorkflowType) (contracts.Budget, bool) {
	r, ok := Workflows[w]
	if !ok {
		return contracts.Budget{}, false
	}
	return contracts.Budget{
		PolicyVersion:      r.version,
		MaxTurns:           r.turns,
		MaxStatements:      r.statements,
		DeadlineMs:         r.deadlineS * 1000,
		DBTimeMs:           r.dbTimeS * 1000,
		StatementTimeoutMs: StatementTimeoutMs,
		MaxRows:            MaxRows,
		MaxBytes:           MaxBytes,
		ModelTurnTimeoutMs: ModelTurnTimeoutMs,
		MaxRepairs:         MaxRepairs,
		ReportReserveTurns: ReportReserveTurns,
		ReportReserveMs:    ReportReserveMs,
	}, true
}

// Supported reports whether this release can drive runs of mode and
// workflow: the workflow has a row, and for agent runs its row has tools.
// Every workflow can be planned (a planning run is toolless whatever it is
// for); an agent run of a workflow whose tools are not built yet is refused
// with a clear code rather than run half-built.
func Supported(m contracts.Mode, w contracts.WorkflowType) bool {
	r, ok := Workflows[w]
	switch {
	case !ok:
		return false
	case m == contracts.ModePlanning:
		return true
	case m == contracts.ModeAgent:
		return len(r.AgentTools) > 0
	}
	return false
}

// Tools returns the tools a run of mode m and workflow w offers the model.
// Planning has none, whatever the workflow.
func Tools(m contracts.Mode, w contracts.WorkflowType) []string {
	r, ok := Workflows[w]
	if m != contracts.ModeAgent || !ok {
		return []string{}
	}
	return append([]string{}, r.AgentTools...)
}
