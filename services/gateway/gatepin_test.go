package gateway_test

import (
	"net/http"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/api"
)

// TestCapabilityGateRefusesOnlyOnDisproof (issue 17, item 18): the start
// gate refuses an agent run only on what the probe watched fail
// (disproved), never on what it merely could not observe: a model whose
// streaming went unobserved starts, one watched answering in one buffered
// body is refused.
func TestCapabilityGateRefusesOnlyOnDisproof(t *testing.T) {
	all := []string{contracts.CapabilityToolCalling, contracts.CapabilityStructuredOutput}
	for _, c := range []struct {
		name      string
		disproved []string
		want      int
	}{
		{"streaming unobserved", nil, http.StatusAccepted},
		{"streaming watched failing", []string{contracts.CapabilityStreaming}, http.StatusUnprocessableEntity},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			serveProber(e, contracts.ModelProbeReply{Provider: "ollama", Model: "m",
				Verified: all, Missing: []string{contracts.CapabilityStreaming}, Disproved: c.disproved,
				Message: "The model streamed nothing the probe could watch."})
			e.putConnection(contracts.ConnectionDescriptor{ID: "shop", Engine: contracts.EngineSQLite, Identity: "id-shop"})
			e.serveOrchestrator(accept)
			status, _, body := e.call(http.MethodPost, api.PathRuns, tokAlice, `{"objective":"x","connectionId":"shop"}`)
			if status != c.want {
				t.Fatalf("status %d, want %d: %s", status, c.want, body)
			}
		})
	}
}
