package gateway_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/api"
)

// serveProber answers plain probes with the model's name and capability
// probes with verdict.
func serveProber(e *env, verdict contracts.ModelProbeReply) {
	e.respond(contracts.SubjectModelProbe, func(b []byte) any {
		var req contracts.ModelProbeRequest
		_ = json.Unmarshal(b, &req)
		if !req.Capabilities {
			return contracts.ModelProbeReply{Provider: "ollama", Model: "gemma3:270m",
				Tuning: &contracts.ModelTuning{State: contracts.TuningIgnored, Path: "/etc/sonde/tuning.json", Reason: "the file does not exist", SettingsSource: contracts.SettingsOperatorIgnored}}
		}
		return verdict
	})
}

func TestAgentRunOnAModelThatCannotCallToolsIsRefused422(t *testing.T) {
	e := newEnv(t)
	serveProber(e, contracts.ModelProbeReply{Provider: "ollama", Model: "gemma3:270m",
		Missing:   []string{contracts.CapabilityToolCalling, contracts.CapabilityStructuredOutput, contracts.CapabilityStreaming},
		Disproved: []string{contracts.CapabilityToolCalling},
		Message:   `The ollama model "gemma3:270m" refused a request that declares a tool.`})
	e.putConnection(contracts.ConnectionDescriptor{ID: "shop", Engine: contracts.EngineSQLite, Identity: "id-shop"})
	got := e.serveOrchestrator(accept)

	status, _, body := e.call(http.MethodPost, api.PathRuns, tokAlice, `{"objective":"x","connectionId":"shop"}`)
	var refusal api.AgentModelRefusal
	if status != http.StatusUnprocessableEntity || json.Unmarshal(body, &refusal) != nil {
		t.Fatalf("status %d body %s", status, body)
	}
	if refusal.Error.Code != api.CodeModelCapabilityMissing || refusal.Error.Message == "" || refusal.Error.Fix == "" || len(refusal.Missing) != 3 || !slices.Equal(refusal.Disproved, []string{contracts.CapabilityToolCalling}) || refusal.Mode != contracts.ModeAgent {
		t.Fatalf("refusal %+v", refusal)
	}
	select {
	case req := <-got:
		t.Fatalf("a refused run reached the orchestrator: %+v", req)
	default:
	}

	// Planning is toolless and never probed.
	status, _, body = e.call(http.MethodPost, api.PathRuns, tokAlice, `{"mode":"planning","objective":"x","connectionId":"shop"}`)
	if status == http.StatusUnprocessableEntity {
		t.Fatalf("a planning run was refused by the probe: %s", body)
	}
}

func TestProbeFailureWithoutVerdictStartsAsBefore(t *testing.T) {
	e := newEnv(t)
	serveProber(e, contracts.ModelProbeReply{Provider: "ollama", Model: "m",
		Failure: &contracts.ModelFailure{Reason: contracts.ReasonModelRateLimited, Retryable: true, Message: "rate limited"}})
	e.putConnection(contracts.ConnectionDescriptor{ID: "shop", Engine: contracts.EngineSQLite, Identity: "id-shop"})
	e.serveOrchestrator(accept)
	status, _, body := e.call(http.MethodPost, api.PathRuns, tokAlice, `{"objective":"x","connectionId":"shop"}`)
	if status != http.StatusAccepted {
		t.Fatalf("status %d body %s", status, body)
	}
}

func TestAgentConfigReportsModelTuningToAdminsOnly(t *testing.T) {
	e := newEnv(t)
	serveProber(e, contracts.ModelProbeReply{})
	for tok, want := range map[string]bool{tokAdmin: true, tokAlice: false} {
		status, _, body := e.call(http.MethodGet, api.PathConfig, tok, "")
		var cfg api.AgentConfig
		if status != http.StatusOK || json.Unmarshal(body, &cfg) != nil {
			t.Fatalf("status %d body %s", status, body)
		}
		if (cfg.ModelTuning != nil) != want || (want && (cfg.ModelTuning.State != contracts.TuningIgnored || cfg.ModelTuning.Reason == "")) {
			t.Fatalf("token %s: %s", tok, body)
		}
	}
}
