package policy

import (
	"fmt"
	"strings"

	"github.com/sondehq/sonde/contracts"
)

// MaxObjectiveBytes is the longest objective a run starts with.
const MaxObjectiveBytes = 16 << 10

// CheckStart is the one rule for what a run may start with: it fills in the
// defaults (an agent run of the investigation workflow) and refuses what
// cannot start, in the order a caller would fix it. The gateway answers a
// start request with it (400 and the problem as it is) before anything is
// sent, and the orchestrator applies it to every start command it is sent.
// Whether this release drives the mode and workflow (Supported), the actor
// and the connection are the orchestrator's to check.
func CheckStart(cmd *contracts.StartRun) *contracts.Error {
	if cmd.WorkflowType == "" {
		cmd.WorkflowType = contracts.WorkflowInvestigation
	}
	if cmd.Mode == "" {
		cmd.Mode = contracts.ModeAgent
	}
	switch {
	case !cmd.WorkflowType.Valid():
		return &contracts.Error{Code: contracts.CodeUnknownWorkflow,
			Message: fmt.Sprintf("unknown workflowType %q", cmd.WorkflowType),
			Fix:     "use one of: " + List(nil, ", ") + " (or omit it for investigation)"}
	case !cmd.Mode.Valid():
		return &contracts.Error{Code: contracts.CodeUnknownMode,
			Message: fmt.Sprintf("unknown mode %q", cmd.Mode),
			Fix:     `use "agent" or "planning" (or omit it for agent)`}
	case strings.TrimSpace(cmd.Objective) == "":
		return &contracts.Error{Code: contracts.CodeMissingObjective,
			Message: "objective is missing or blank",
			Fix:     "state what you want to know in objective"}
	case len(cmd.Objective) > MaxObjectiveBytes:
		return &contracts.Error{Code: contracts.CodeBadRequest,
			Message: fmt.Sprintf("objective is %d bytes, more than %d", len(cmd.Objective), MaxObjectiveBytes),
			Fix:     "shorten the objective"}
	case cmd.PreviousRunID != "" && !contracts.ValidRunID(cmd.PreviousRunID):
		return &contracts.Error{Code: contracts.CodeBadRequest,
			Message: "previousRunId is not a run id",
			Fix:     "pass the runId of an earlier run of yours, or omit previousRunId"}
	case cmd.AutoExecute && (cmd.Mode != contracts.ModeAgent || !Workflows[cmd.WorkflowType].AutoExecute):
		return &contracts.Error{Code: contracts.CodeBadRequest,
			Message: "autoExecute applies to agent-mode data-analysis runs only",
			Fix:     `omit autoExecute, or use mode "agent" with workflowType "data-analysis"`}
	}
	return nil
}
