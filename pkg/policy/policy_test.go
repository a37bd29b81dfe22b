package policy

import (
	"slices"
	"strings"
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
		if r.Label == "" || r.Goal == "" || r.PlanDeliverable == "" || r.PlanRule == "" {
			t.Errorf("%s: label %q, goal %q, plan deliverable %q, plan rule %q", w, r.Label, r.Goal, r.PlanDeliverable, r.PlanRule)
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

// allTools lists every tool name a row may offer.
var allTools = []string{ToolInspectSchema, ToolRunReadQuery, ToolInspectPlan, ToolComposeReport,
	ToolComparePlans, ToolRecommendChange, ToolProfileTable, ToolInspectOperations, ToolPresentAnswer}

// TestEveryGuideNamesOnlyItsOwnTools: a rule that names a tool the run is
// not offered sends the model after something it cannot call; a row that
// presents an answer without offering present_answer (or the reverse)
// promises what it cannot do.
func TestEveryGuideNamesOnlyItsOwnTools(t *testing.T) {
	for w, r := range Workflows {
		if len(r.AgentTools) == 0 {
			continue
		}
		if strings.TrimSpace(r.AgentGuide) == "" {
			t.Errorf("%s: no agent guide", w)
		}
		for _, name := range allTools {
			if strings.Contains(r.AgentGuide, name) && !slices.Contains(r.AgentTools, name) {
				t.Errorf("%s: the guide names %s, which the row does not offer", w, name)
			}
		}
		if r.PresentsAnswer != slices.Contains(r.AgentTools, ToolPresentAnswer) {
			t.Errorf("%s: PresentsAnswer %v with tools %v", w, r.PresentsAnswer, r.AgentTools)
		}
		if r.AutoExecute && !r.PresentsAnswer {
			t.Errorf("%s: auto-execute without an answer to hand over", w)
		}
		if slices.Contains(r.AgentTools, ToolComparePlans) && !slices.Contains(r.AgentTools, ToolInspectPlan) {
			t.Errorf("%s: compare_plans without inspect_plan can only ever refuse", w)
		}
	}
}

// TestDescribeIsTheTable: the workflows callers are told of are the table's
// rows, every one, in contracts.WorkflowTypes' order, each as its row says.
func TestDescribeIsTheTable(t *testing.T) {
	ds := Describe()
	if len(ds) != len(Workflows) || len(ds) != len(contracts.WorkflowTypes) {
		t.Fatalf("described %d workflows, the table holds %d", len(ds), len(Workflows))
	}
	for i, d := range ds {
		r := Workflows[d.Type]
		if d.Type != contracts.WorkflowTypes[i] || d.Label != r.Label || d.Goal != r.Goal ||
			d.Agent != (len(r.AgentTools) > 0) || d.AutoExecute != r.AutoExecute {
			t.Errorf("described %+v, the row says %+v", d, r)
		}
	}
	if got := List(nil, " or "); got != "investigation, query-optimization, database-assessment, operations or data-analysis" {
		t.Errorf("List: %q", got)
	}
}
