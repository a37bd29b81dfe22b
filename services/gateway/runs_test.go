package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/artifacts"
	"github.com/sondehq/sonde/services/gateway"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/gateway/client"
)

// readyEnv is a gateway whose agents are available: a model answers the
// probe and the connection "shop" is published.
func readyEnv(t *testing.T, configure ...func(*gateway.Config)) *env {
	t.Helper()
	e := newEnv(t, configure...)
	e.serveModel(contracts.ModelProbeReply{Provider: "openai", Model: "gpt-test"})
	e.putConnection(contracts.ConnectionDescriptor{ID: "shop", Engine: contracts.EngineSQLite, Identity: "id-shop"})
	return e
}

func TestStartRunRefusals(t *testing.T) {
	e := readyEnv(t)
	got := e.serveOrchestrator(accept)
	cases := []struct {
		name, body string
		code       contracts.Code
		fix        string
	}{
		{"malformed", `{"objective":`, contracts.CodeBadRequest, ""},
		{"not an object", `[1]`, contracts.CodeBadRequest, ""},
		{"empty body", ``, contracts.CodeBadRequest, ""},
		{"unknown field", `{"objective":"x","connectionId":"shop","dsn":"postgres://"}`, contracts.CodeBadRequest, ""},
		{"trailing data", `{"objective":"x","connectionId":"shop"} {}`, contracts.CodeBadRequest, ""},
		{"wrong type", `{"objective":42,"connectionId":"shop"}`, contracts.CodeBadRequest, ""},
		{"unknown workflow", `{"workflowType":"poetry","objective":"x","connectionId":"shop"}`, contracts.CodeUnknownWorkflow, "investigation"},
		{"unknown mode", `{"mode":"autopilot","objective":"x","connectionId":"shop"}`, contracts.CodeUnknownMode, "planning"},
		{"missing objective", `{"connectionId":"shop"}`, contracts.CodeMissingObjective, ""},
		{"blank objective", `{"objective":"  \n ","connectionId":"shop"}`, contracts.CodeMissingObjective, ""},
		{"bad previous run", `{"objective":"x","connectionId":"shop","previousRunId":"a.b"}`, contracts.CodeInvalidID, "letters, digits"},
		{"auto-execute outside data-analysis", `{"objective":"x","connectionId":"shop","autoExecute":true}`, contracts.CodeBadRequest, ""},
		{"unknown connection", `{"objective":"x","connectionId":"warehouse"}`, contracts.CodeUnknownConnection, api.PathConnections},
		{"missing connection", `{"objective":"x"}`, contracts.CodeUnknownConnection, api.PathConnections},
		{"unusable connection key", `{"objective":"x","connectionId":"a b*"}`, contracts.CodeInvalidID, "letters, digits"},
		{"key of another case", `{"objective":"x","connectionId":"shop","Objective":"y"}`, contracts.CodeBadRequest, "spelled exactly"},
		{"key twice", `{"objective":"x","connectionId":"shop","objective":"y"}`, contracts.CodeBadRequest, "spelled exactly"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := e.call(http.MethodPost, api.PathRuns, tokAlice, tc.body)
			er := wantError(t, status, body, http.StatusBadRequest, tc.code)
			if !strings.Contains(er.Fix, tc.fix) {
				t.Fatalf("fix %q does not mention %q", er.Fix, tc.fix)
			}
		})
	}
	select {
	case req := <-got:
		t.Fatalf("a refused request reached the orchestrator: %+v", req)
	default:
	}
}

func TestStartRun(t *testing.T) {
	e := readyEnv(t)
	got := e.serveOrchestrator(func(req contracts.StartRun) contracts.StartRunReply {
		// The orchestrator answers with what the ledger persisted.
		return contracts.StartRunReply{RunID: req.RunID, Mode: req.Mode, WorkflowType: contracts.WorkflowDataAnalysis}
	})
	resp, err := e.client(tokAlice).StartRun(e.ctx, client.StartRunRequest{
		Objective: "which customers churned", ConnectionID: "shop", PreviousRunID: "r0ld",
	})
	if err != nil {
		t.Fatal(err)
	}
	req := <-got
	if req.Actor != alice {
		t.Errorf("actor %+v, want alice from her token", req.Actor)
	}
	if req.Mode != contracts.ModeAgent || req.WorkflowType != contracts.WorkflowInvestigation {
		t.Errorf("defaults not applied: %+v", req)
	}
	if req.Objective != "which customers churned" || req.ConnectionID != "shop" || req.PreviousRunID != "r0ld" {
		t.Errorf("request %+v", req)
	}
	if !contracts.ValidRunID(req.RunID) || !strings.HasPrefix(req.RunID, "r") || strings.ToLower(req.RunID) != req.RunID {
		t.Errorf("run id %q", req.RunID)
	}
	want := client.StartRunResponse{RunID: req.RunID, Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowDataAnalysis}
	if resp != want {
		t.Fatalf("got %+v, want %+v", resp, want)
	}

	// Every start gets its own id.
	if _, err := e.client(tokAlice).StartRun(e.ctx, client.StartRunRequest{Objective: "again", ConnectionID: "shop", Mode: contracts.ModePlanning}); err != nil {
		t.Fatal(err)
	}
	if again := <-got; again.RunID == req.RunID || again.Mode != contracts.ModePlanning {
		t.Fatalf("second start %+v", again)
	}

	status, _, body := e.call(http.MethodPost, api.PathRuns, tokAlice, `{"objective":"x","connectionId":"shop"}`)
	if status != http.StatusAccepted {
		t.Fatalf("%d %s", status, body)
	}
	<-got
	var raw map[string]any
	_ = json.Unmarshal(body, &raw)
	if raw["runId"] == "" || raw["mode"] != "agent" || raw["workflowType"] != "data-analysis" {
		t.Fatalf("body %s", body)
	}
}

func TestStartRunRelaysOrchestratorErrors(t *testing.T) {
	e := readyEnv(t)
	code := make(chan contracts.Code, 1)
	e.serveOrchestrator(func(contracts.StartRun) contracts.StartRunReply {
		return contracts.StartRunReply{Error: &contracts.Error{Code: <-code, Message: "refused", Fix: "do better"}}
	})
	for c, status := range map[contracts.Code]int{
		contracts.CodeRunExists:         http.StatusConflict,
		contracts.CodeUnknownConnection: http.StatusBadRequest,
	} {
		code <- c
		_, err := e.client(tokAlice).StartRun(e.ctx, client.StartRunRequest{Objective: "x", ConnectionID: "shop"})
		if ae := apiErr(t, err, status, c); ae.Fix != "do better" {
			t.Fatalf("fix %q", ae.Fix)
		}
	}
}

func TestStartRunUnavailable(t *testing.T) {
	t.Run("no orchestrator", func(t *testing.T) {
		e := readyEnv(t)
		_, err := e.client(tokAlice).StartRun(e.ctx, client.StartRunRequest{Objective: "x", ConnectionID: "shop"})
		if ae := apiErr(t, err, http.StatusServiceUnavailable, contracts.CodeUnavailable); !strings.Contains(ae.Message, "orchestrator") {
			t.Fatalf("message %q", ae.Message)
		}
	})
	t.Run("operator disabled", func(t *testing.T) {
		e := readyEnv(t, func(c *gateway.Config) { c.Disabled = true })
		e.serveOrchestrator(accept)
		_, err := e.client(tokAlice).StartRun(e.ctx, client.StartRunRequest{Objective: "x", ConnectionID: "shop"})
		apiErr(t, err, http.StatusServiceUnavailable, contracts.CodeOperatorDisabled)
	})
	t.Run("no model", func(t *testing.T) {
		e := newEnv(t)
		e.putConnection(contracts.ConnectionDescriptor{ID: "shop", Engine: contracts.EngineSQLite})
		e.serveOrchestrator(accept)
		_, err := e.client(tokAlice).StartRun(e.ctx, client.StartRunRequest{Objective: "x", ConnectionID: "shop"})
		apiErr(t, err, http.StatusServiceUnavailable, contracts.CodeNoModelConfigured)
	})
}

func TestGetRun(t *testing.T) {
	e := newEnv(t)
	e.finishedRun("r1", alice)
	rec, err := e.client(tokAlice).Run(e.ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if rec.RunID != "r1" || rec.Actor != alice || rec.Status != contracts.StatusSucceeded ||
		len(rec.Steps) != 1 || rec.Steps[0].Status != contracts.StepCompleted || rec.Entries != 5 {
		t.Fatalf("record %+v", rec)
	}

	// A foreign run and a missing run get the same answer, even for an admin.
	for _, tc := range []struct{ token, id string }{{tokBob, "r1"}, {tokAdmin, "r1"}, {tokAlice, "nope"}} {
		_, err := e.client(tc.token).Run(e.ctx, tc.id)
		if ae := apiErr(t, err, http.StatusNotFound, contracts.CodeRunNotFound); strings.Contains(ae.Message, "alice") {
			t.Fatalf("the answer names the owner: %q", ae.Message)
		}
	}
}

func TestCancelRun(t *testing.T) {
	e := newEnv(t)
	e.startedRun("live", alice)
	e.finishedRun("done", alice)

	_, err := e.client(tokAlice).Cancel(e.ctx, "live")
	apiErr(t, err, http.StatusServiceUnavailable, contracts.CodeUnavailable) // no orchestrator yet

	got := make(chan contracts.CancelRun, 4)
	e.respond(contracts.SubjectRunCancel, func(data []byte) any {
		var req contracts.CancelRun
		_ = json.Unmarshal(data, &req)
		got <- req
		return contracts.CancelRunReply{Status: contracts.StatusRunning}
	})
	status, err := e.client(tokAlice).Cancel(e.ctx, "live")
	if err != nil {
		t.Fatal(err)
	}
	if status != contracts.StatusRunning {
		t.Fatalf("status %s", status)
	}
	if req := <-got; req.RunID != "live" || req.Actor != alice {
		t.Fatalf("cancel %+v", req)
	}

	_, err = e.client(tokAlice).Cancel(e.ctx, "done")
	apiErr(t, err, http.StatusConflict, contracts.CodeRunFinished)
	_, err = e.client(tokBob).Cancel(e.ctx, "live")
	apiErr(t, err, http.StatusNotFound, contracts.CodeRunNotFound)
	if len(got) != 0 {
		t.Fatal("a refused cancel reached the orchestrator")
	}
}

func TestArtifacts(t *testing.T) {
	e := newEnv(t)
	e.finishedRun("r1", alice)
	st, err := artifacts.New(e.ctx, e.js)
	if err != nil {
		t.Fatal(err)
	}
	want := contracts.Artifact{
		ArtifactSummary: contracts.ArtifactSummary{CorrelationID: "c1", Columns: []contracts.Column{{Name: "n"}}, Rows: 1},
		RunID:           "r1", ConnectionID: "shop", Profile: contracts.ProfileAgentReadOnly, SQL: "select 1 as n",
		Data: [][]any{{float64(1)}},
	}
	if err := st.Put(e.ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := e.client(tokAlice).Artifact(e.ctx, "r1", "c1")
	if err != nil {
		t.Fatal(err)
	}
	if got.SQL != want.SQL || got.CorrelationID != "c1" || len(got.Data) != 1 {
		t.Fatalf("artifact %+v", got)
	}
	_, err = e.client(tokBob).Artifact(e.ctx, "r1", "c1")
	apiErr(t, err, http.StatusNotFound, contracts.CodeRunNotFound)
	_, err = e.client(tokAlice).Artifact(e.ctx, "r1", "c2")
	apiErr(t, err, http.StatusNotFound, contracts.CodeArtifactNotFound)
	// An id that is no subject token is refused by its form, for anyone.
	_, err = e.client(tokAlice).Artifact(e.ctx, "r1", "c.2")
	apiErr(t, err, http.StatusBadRequest, contracts.CodeInvalidID)
	_, err = e.client(tokBob).Run(e.ctx, "bad.id")
	apiErr(t, err, http.StatusBadRequest, contracts.CodeInvalidID)
}

func TestConnections(t *testing.T) {
	e := newEnv(t)
	conns, err := e.client(tokAlice).Connections(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(conns) != 0 {
		t.Fatalf("empty bucket: %+v", conns)
	}
	status, _, body := e.call(http.MethodGet, api.PathConnections, tokAlice, "")
	if status != http.StatusOK || strings.TrimSpace(string(body)) != `{"connections":[]}` {
		t.Fatalf("%d %s", status, body)
	}

	for _, id := range []string{"warehouse", "analytics", "shop"} {
		e.putConnection(contracts.ConnectionDescriptor{ID: id, Engine: contracts.EnginePostgres, Identity: "id-" + id})
	}
	conns, err = e.client(tokAlice).Connections(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range conns {
		ids = append(ids, c.ID)
	}
	if strings.Join(ids, ",") != "analytics,shop,warehouse" || conns[0].Identity != "id-analytics" {
		t.Fatalf("connections %+v", conns)
	}
}
