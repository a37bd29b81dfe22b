// Package policy holds the frozen execution policies: one budget row per
// workflow and the tools each mode and workflow offers. The row is always
// chosen from a run's persisted workflow, never from a caller.
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

type row struct {
	version            string
	turns, statements  int
	deadlineS, dbTimeS int64
}

var rows = map[contracts.WorkflowType]row{
	contracts.WorkflowInvestigation:      {"agent-read-only.investigation.1", 36, 30, 450, 90},
	contracts.WorkflowQueryOptimization:  {"agent-read-only.query-optimization.1", 36, 30, 450, 90},
	contracts.WorkflowDatabaseAssessment: {"agent-read-only.database-assessment.1", 48, 45, 630, 135},
	contracts.WorkflowOperations:         {"agent-read-only.operations.2", 20, 18, 360, 80},
	contracts.WorkflowDataAnalysis:       {"agent-read-only.data-analysis.1", 60, 42, 900, 180},
}

// Budget returns the budget row of workflow w.
func Budget(w contracts.WorkflowType) (contracts.Budget, bool) {
	r, ok := rows[w]
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

// Supported reports whether this release can drive runs of mode and workflow.
// Every workflow can be planned (a planning run is toolless whatever it is
// for); of agent runs only investigations are driven so far, and the others
// are refused with a clear code rather than run half-built.
func Supported(m contracts.Mode, w contracts.WorkflowType) bool {
	switch m {
	case contracts.ModePlanning:
		return w.Valid()
	case contracts.ModeAgent:
		return w == contracts.WorkflowInvestigation
	}
	return false
}

// Tools returns the tools a run of mode m and workflow w offers the model.
// Planning has none, whatever the workflow.
func Tools(m contracts.Mode, w contracts.WorkflowType) []string {
	if m != contracts.ModeAgent {
		return []string{}
	}
	switch w {
	case contracts.WorkflowInvestigation:
		return []string{ToolInspectSchema, ToolRunReadQuery, ToolComposeReport}
	default:
		return []string{}
	}
}
