package policy

import (
	"testing"

	"github.com/sondehq/sonde/contracts"
)

// TestAgentRunNeedsTools: every row in the table has tools today, so the
// rule that a row without them is planned but never driven as an agent run
// is held here with a row added for the test: supported for planning,
// refused for agent runs, offering no tools; a workflow without a row is
// supported for neither.
func TestAgentRunNeedsTools(t *testing.T) {
	const toolless contracts.WorkflowType = "toolless-for-test"
	r := Workflows[contracts.WorkflowInvestigation]
	r.AgentTools, r.AgentGuide, r.AgentRule = nil, "", ""
	Workflows[toolless] = r
	t.Cleanup(func() { delete(Workflows, toolless) })
	if !Supported(contracts.ModePlanning, toolless) || Supported(contracts.ModeAgent, toolless) || len(Tools(contracts.ModeAgent, toolless)) != 0 {
		t.Errorf("a row without tools: planning %v, agent %v, tools %v",
			Supported(contracts.ModePlanning, toolless), Supported(contracts.ModeAgent, toolless), Tools(contracts.ModeAgent, toolless))
	}
	if Supported(contracts.ModePlanning, "no-such-workflow") || Supported(contracts.ModeAgent, "no-such-workflow") {
		t.Error("a workflow without a row is supported")
	}
}
