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
)

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
	// Goal says what a run of the workflow is for, in the rules of both
	// modes.
	Goal string
	// AgentTools are the tools an agent run offers, the finishing tool
	// last; nil while agent runs of the workflow are not driven yet.
	AgentTools []string
	// PlanDeliverable is what a planning run hands the user; PlanIsProse
	// marks a plan that is prose (a fenced statement welcome, never
	// required).
	PlanDeliverable string
	PlanIsProse     bool
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
		Goal:            "answer the user's objective from what the database holds",
		AgentTools:      []string{ToolInspectSchema, ToolRunReadQuery, ToolInspectPlan, ToolComposeReport},
		PlanDeliverable: "the one statement whose result answers the objective",
		AgentRule:       "agent-investigation.1", PlanRule: "agent-planning.1",
	},
	contracts.WorkflowQueryOptimization: {
		version: "agent-read-only.query-optimization.1", turns: 36, statements: 30, deadlineS: 450, dbTimeS: 90,
		Goal:            "make the user's query faster, from its plan and the schema",
		PlanDeliverable: "the rewritten statement (or the index to create, as a statement the user reviews) that makes the user's query faster, with why it is faster",
		PlanRule:        "agent-planning.1",
	},
	contracts.WorkflowDatabaseAssessment: {
		version: "agent-read-only.database-assessment.1", turns: 48, statements: 45, deadlineS: 630, dbTimeS: 135,
		Goal:            "assess what is wrong with the database: data quality, keys, indexes",
		PlanDeliverable: "the one statement that measures the concern the objective names (nulls, duplicates, orphans, skew)",
		PlanRule:        "agent-planning.1",
	},
	contracts.WorkflowOperations: {
		version: "agent-read-only.operations.2", turns: 20, statements: 18, deadlineS: 360, dbTimeS: 80,
		Goal:            "say what is happening on the server right now",
		PlanDeliverable: "a short operational plan in prose: what to look at on the server and in what order; where the engine exposes a reading as a statement you may fence it",
		PlanIsProse:     true,
		PlanRule:        "agent-planning.1",
	},
	contracts.WorkflowDataAnalysis: {
		version: "agent-read-only.data-analysis.1", turns: 60, statements: 42, deadlineS: 900, dbTimeS: 180,
		Goal:            "answer an analytical question with a result shaped for a table or a chart",
		PlanDeliverable: "the one statement whose result is the answer, shaped for a table or a chart (one row per category or period)",
		PlanRule:        "agent-planning.1",
		PresentsAnswer:  true, AutoExecute: true,
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
