package gateway_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
	"github.com/sondehq/sonde/services/gateway/api"
)

// TestStartCreatedButAnsweredLateIs202 (issue 17, item 15): the gateway tells
// the orchestrator when it stops waiting (notAfter, about 10 s on), and a
// start that the orchestrator created but answered too late is settled from
// the ledger: 202 with the run and its Location, never a 503 for a run that
// exists (the other half, a start never created, is TestFaults'
// StartAnsweredLateIsSettled).
func TestStartCreatedButAnsweredLateIs202(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the gateway's 10 s")
	}
	e := newEnv(t)
	serveProber(e, contracts.ModelProbeReply{Provider: "ollama", Model: "m", Verified: []string{contracts.CapabilityToolCalling,
		contracts.CapabilityStructuredOutput, contracts.CapabilityStreaming}})
	e.putConnection(contracts.ConnectionDescriptor{ID: "shop", Engine: contracts.EngineSQLite, Identity: "id-shop"})
	sent := time.Now()
	got := e.serveOrchestrator(func(req contracts.StartRun) contracts.StartRunReply {
		budget, _ := policy.Budget(contracts.WorkflowInvestigation)
		if _, err := e.led.Writer(req.RunID, 0, nil).Append(e.ctx, contracts.KindRunStarted, contracts.RunStarted{
			Mode: req.Mode, WorkflowType: req.WorkflowType, Objective: req.Objective, ConnectionID: req.ConnectionID,
			Engine: contracts.EngineSQLite, Actor: req.Actor, Budget: budget}); err != nil {
			t.Error(err)
		}
		time.Sleep(11 * time.Second) // created, then answered after the gateway stopped waiting
		return accept(req)
	})
	status, header, body := e.call(http.MethodPost, api.PathRuns, tokAlice, `{"objective":"x","connectionId":"shop"}`)
	req := <-got
	if req.NotAfter.Before(sent.Add(5*time.Second)) || req.NotAfter.After(time.Now()) {
		t.Errorf("the start's notAfter is %v, want the instant the gateway stops waiting", req.NotAfter)
	}
	var r api.StartRunResponse
	if status != http.StatusAccepted || json.Unmarshal(body, &r) != nil || r.RunID != req.RunID || header.Get("Location") != api.RunPath(req.RunID) {
		t.Fatalf("a run created and answered late: %d %s (Location %q), want 202 with run %s", status, body, header.Get("Location"), req.RunID)
	}
}
