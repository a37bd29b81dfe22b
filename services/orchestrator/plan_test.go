package orchestrator

import (
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
)

// TestInspectPlanAsksTheExecutorForAPlan: inspect_plan is one statement the
// executor plans (never reads), recorded and citable like any result.
func TestInspectPlanAsksTheExecutorForAPlan(t *testing.T) {
	h := newHarness(t, Config{})
	h.model.script = func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
		if n == 0 {
			return contracts.ModelTurnReply{ToolCalls: []contracts.ModelToolCall{{ID: "p", Name: policy.ToolInspectPlan, Arguments: `{"sql":"SELECT * FROM t WHERE n = 1","reason":null}`}}}
		}
		return contracts.ModelTurnReply{}
	}
	var asked []contracts.ExecOp
	h.exec.answer = func(_ int, req contracts.ExecRequest) (contracts.ExecReply, error) {
		r := okReply(req, 2)
		r.Plan = &contracts.PlanSummary{Engine: contracts.EngineSQLite, Access: []contracts.RelationAccess{{Relation: "t", Access: contracts.AccessFullScan}}}
		return r, nil
	}
	_, rec, err := h.drive(t, "plan", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range h.exec.calls {
		if c.req.StepID != "context" {
			asked = append(asked, c.op)
		}
	}
	if len(asked) != 1 || asked[0] != contracts.OpExplain {
		t.Fatalf("the executor was asked %v, want one explain", asked)
	}
	if len(rec.Steps) == 0 || rec.Steps[0].Tool != policy.ToolInspectPlan || rec.Steps[0].Status != contracts.StepCompleted || rec.Steps[0].Artifact == nil {
		t.Fatalf("steps %+v", rec.Steps)
	}
}
