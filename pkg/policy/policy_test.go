package policy

import (
	"testing"

	"github.com/sondehq/sonde/contracts"
)

// TestEveryWorkflowIsAWholeRow: a workflow without a budget, a goal, a plan
// deliverable or a verdict rule fails here, as does an agent row whose tools
// do not end with the finishing tool or that names no agent rule.
func TestEveryWorkflowIsAWholeRow(t *testing.T) {
	for _, w := range contracts.WorkflowTypes {
		r, ok := Workflows[w]
		if !ok {
			t.Errorf("workflow %s has no row", w)
			continue
		}
		b, _ := Budget(w)
		if b.PolicyVersion == "" || b.MaxTurns <= 0 || b.MaxStatements <= 0 || b.DeadlineMs <= 0 || b.DBTimeMs <= 0 {
			t.Errorf("%s: incomplete budget %+v", w, b)
		}
		if r.Goal == "" || r.PlanDeliverable == "" || r.PlanRule == "" {
			t.Errorf("%s: goal %q, plan deliverable %q, plan rule %q", w, r.Goal, r.PlanDeliverable, r.PlanRule)
		}
		if !Supported(contracts.ModePlanning, w) {
			t.Errorf("%s cannot be planned", w)
		}
		if len(r.AgentTools) == 0 {
			if r.AgentRule != "" || Supported(contracts.ModeAgent, w) {
				t.Errorf("%s: an agent rule or agent support without tools", w)
			}
			continue
		}
		if r.AgentRule == "" || r.AgentTools[len(r.AgentTools)-1] != ToolComposeReport || !Supported(contracts.ModeAgent, w) {
			t.Errorf("%s: agent row %+v", w, r)
		}
	}
	if len(Workflows) != len(contracts.WorkflowTypes) {
		t.Errorf("%d rows for %d workflows", len(Workflows), len(contracts.WorkflowTypes))
	}
}
