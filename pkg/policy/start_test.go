package policy

import (
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
)

// TestCheckStartDefaults: a start that names neither mode nor workflow is
// an agent run of the investigation workflow.
func TestCheckStartDefaults(t *testing.T) {
	cmd := contracts.StartRun{Objective: "why did orders fall"}
	if p := CheckStart(&cmd); p != nil {
		t.Fatalf("refused: %+v", p)
	}
	if cmd.Mode != contracts.ModeAgent || cmd.WorkflowType != contracts.WorkflowInvestigation {
		t.Fatalf("defaults %s / %s, want agent / investigation", cmd.Mode, cmd.WorkflowType)
	}
	hand := contracts.StartRun{Objective: "x", WorkflowType: contracts.WorkflowDataAnalysis, AutoExecute: true}
	if p := CheckStart(&hand); p != nil {
		t.Fatalf("an agent data-analysis run with autoExecute refused: %+v", p)
	}
}

// TestCheckStartRefusals: each start that cannot start is refused with its
// code, the first fault a caller would fix named first.
func TestCheckStartRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		cmd  contracts.StartRun
		code string
		says string
	}{
		"unknown workflow":      {contracts.StartRun{Objective: "x", WorkflowType: "poetry"}, string(contracts.CodeUnknownWorkflow), "poetry"},
		"workflow before mode":  {contracts.StartRun{Objective: "x", WorkflowType: "poetry", Mode: "root"}, string(contracts.CodeUnknownWorkflow), "poetry"},
		"unknown mode":          {contracts.StartRun{Objective: "x", Mode: "root"}, string(contracts.CodeUnknownMode), "root"},
		"mode before objective": {contracts.StartRun{Mode: "root"}, string(contracts.CodeUnknownMode), "root"},
		"missing objective":     {contracts.StartRun{}, string(contracts.CodeMissingObjective), "objective"},
		"blank objective":       {contracts.StartRun{Objective: " \n\t"}, string(contracts.CodeMissingObjective), "objective"},
		"long objective":        {contracts.StartRun{Objective: strings.Repeat("x", MaxObjectiveBytes+1)}, string(contracts.CodeBadRequest), "bytes"},
		"bad previous run":      {contracts.StartRun{Objective: "x", PreviousRunID: "a.b"}, string(contracts.CodeBadRequest), "previousRunId"},
		"auto-execute elsewhere": {contracts.StartRun{Objective: "x", WorkflowType: contracts.WorkflowOperations, AutoExecute: true},
			string(contracts.CodeBadRequest), "autoExecute"},
		"auto-execute planning": {contracts.StartRun{Objective: "x", WorkflowType: contracts.WorkflowDataAnalysis, Mode: contracts.ModePlanning, AutoExecute: true},
			string(contracts.CodeBadRequest), "autoExecute"},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := tc.cmd
			p := CheckStart(&cmd)
			if p == nil {
				t.Fatal("not refused")
			}
			if string(p.Code) != tc.code || !strings.Contains(p.Message, tc.says) || p.Fix == "" {
				t.Fatalf("refused %+v, want code %s naming %q with a fix", p, tc.code, tc.says)
			}
		})
	}
	long := contracts.StartRun{Objective: strings.Repeat("x", MaxObjectiveBytes)}
	if p := CheckStart(&long); p != nil {
		t.Fatalf("an objective of exactly MaxObjectiveBytes refused: %+v", p)
	}
}
