package modelturn_test

import (
	"context"
	"slices"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/services/modelturn"
)

// TestProbeCountsOnlyACallOfItsOwnTool (issue 17, item 18): a model that
// answers the capability probe by calling some other tool — even with the
// probe's own arguments — has not shown that it calls the tool it is
// offered: tool calling is disproved, and nothing the call carried counts.
func TestProbeCountsOnlyACallOfItsOwnTool(t *testing.T) {
	for _, v := range vendors {
		t.Run(v.provider, func(t *testing.T) {
			s, _ := v.serve(t, fixed(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{Name: "run_read_query", Arguments: modelturn.ProbeArguments}}}))
			p := s.Probe(context.Background(), contracts.ModelProbeRequest{Capabilities: true})
			if slices.Contains(p.Verified, contracts.CapabilityToolCalling) || !slices.Contains(p.Disproved, contracts.CapabilityToolCalling) ||
				slices.Contains(p.Verified, contracts.CapabilityStructuredOutput) {
				t.Fatalf("a call of another tool counted for the probe: verified %v, disproved %v", p.Verified, p.Disproved)
			}
		})
	}
}
