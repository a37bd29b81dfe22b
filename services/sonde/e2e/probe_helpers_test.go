package e2e

import (
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/services/modelturn"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// modelRequests are the scripted model's requests, less the start path's
// capability probe.
func modelRequests(s *stacktest.Stack) []modeltest.ChatRequest {
	var out []modeltest.ChatRequest
	for _, r := range s.Model.Requests() {
		if !r.HasTool(modelturn.ProbeTool) {
			out = append(out, r)
		}
	}
	return out
}
