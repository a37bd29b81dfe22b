package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/artifacts"
	"github.com/sondehq/sonde/services/gateway/api"
)

// answeredRun writes a finished data-analysis run opened by a that read sql
// and presented answer (nil: it presented none), on connection shop as
// readyEnv publishes it (identity id-shop).
func (e *env) answeredRun(runID string, a contracts.Actor, sql string, answer *contracts.AnswerComposed) {
	e.t.Helper()
	e.answeredRunOn(runID, "id-shop", a, sql, answer)
}

// answeredRunOn is answeredRun with the connection identity the run's
// header records ("": a run recorded before identities existed).
func (e *env) answeredRunOn(runID, identity string, a contracts.Actor, sql string, answer *contracts.AnswerComposed) {
	e.t.Helper()
	w := e.led.Writer(runID, 0, nil)
	e.append(w, contracts.KindRunStarted, contracts.RunStarted{
		Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowDataAnalysis, AutoExecute: true,
		Objective: "revenue by country", ConnectionID: "shop", ConnectionIdentity: identity, Engine: contracts.EngineSQLite, Actor: a,
		Tools: []string{"run_read_query", "inspect_plan", "present_answer"},
	})
	e.append(w, contracts.KindDriverResolved, contracts.DriverResolved{Provider: "demo", Model: "replay", Demo: true, Drive: 1})
	args, _ := json.Marshal(map[string]string{"sql": sql})
	call := contracts.ToolCall{Turn: 1, CallID: "c1", Tool: "run_read_query", Arguments: args}
	e.append(w, contracts.KindToolInvoked, contracts.ToolInvoked{ToolCall: call, StepID: "s1", CorrelationID: "c1"})
	e.append(w, contracts.KindToolCompleted, contracts.ToolCompleted{ToolCall: call, StepID: "s1", Outcome: contracts.OutcomeOK,
		Artifact: &contracts.ArtifactSummary{CorrelationID: "c1", Rows: 2}})
	if answer != nil {
		answer.ToolCall = contracts.ToolCall{Turn: 2, CallID: "c2", Tool: "present_answer", Arguments: json.RawMessage(`{"artifact":"c1","presentation":{"kind":"table"}}`)}
		answer.CorrelationID = "c1"
		e.append(w, contracts.KindAnswerComposed, *answer)
	}
	e.append(w, contracts.KindRunFinished, contracts.RunFinished{Status: contracts.StatusSucceeded, StopReason: contracts.StopReportComposed})
}

const handoverSQL = "SELECT country, sum(total) FROM orders GROUP BY country"

// TestHandoverRefusals: every answer of the route that reaches no executor.
func TestHandoverRefusals(t *testing.T) {
	e := readyEnv(t)
	// An executor that is never asked: a refusal must not reach it.
	asked := make(chan contracts.ExecRequest, 4)
	e.respond(contracts.ExecSubject(contracts.EngineSQLite, contracts.OpRead), func(data []byte) any {
		var req contracts.ExecRequest
		_ = json.Unmarshal(data, &req)
		asked <- req
		return contracts.ExecReply{Status: contracts.ExecRefused, Refusal: &contracts.Refusal{Code: "x", Message: "x", Fix: "x"}}
	})
	const warning = "The statement was placed in the editor but not run: this run read no plan of this statement (plan-risky)."
	e.answeredRun("r-auto", alice, handoverSQL, &contracts.AnswerComposed{SQL: handoverSQL, Handover: contracts.HandoverAutoExecuted})
	e.answeredRun("r-applied", alice, handoverSQL, &contracts.AnswerComposed{SQL: handoverSQL, Handover: contracts.HandoverApplied, HandoverWarning: warning})
	e.answeredRun("r-none", alice, handoverSQL, &contracts.AnswerComposed{SQL: handoverSQL, Handover: contracts.HandoverNone})
	e.answeredRun("r-old", alice, handoverSQL, &contracts.AnswerComposed{SQL: handoverSQL})
	e.answeredRun("r-unanswered", alice, handoverSQL, nil)
	e.answeredRun("r-nosql", alice, handoverSQL, &contracts.AnswerComposed{Handover: contracts.HandoverAutoExecuted})
	e.finishedRun("r-investigation", alice)
	// The connection id shop reached id-shop when these runs read it; one
	// run read it when it reached another database, one before identities.
	e.answeredRunOn("r-repointed", "id-old-shop", alice, handoverSQL, &contracts.AnswerComposed{SQL: handoverSQL, Handover: contracts.HandoverAutoExecuted})
	e.answeredRunOn("r-no-identity", "", alice, handoverSQL, &contracts.AnswerComposed{SQL: handoverSQL, Handover: contracts.HandoverAutoExecuted})

	cases := []struct {
		name, run, token, body string
		status                 int
		code                   contracts.Code
		says                   string
	}{
		{"applied carries the gate's warning", "r-applied", tokAlice, "", http.StatusConflict, api.CodeNotAutoExecuted, warning},
		{"not opened with autoExecute", "r-none", tokAlice, "", http.StatusConflict, api.CodeNotAutoExecuted, "autoExecute"},
		{"answer recorded before handover existed", "r-old", tokAlice, "", http.StatusConflict, api.CodeNotAutoExecuted, "autoExecute"},
		{"no answer", "r-unanswered", tokAlice, "", http.StatusConflict, api.CodeNoAnswer, "presented no answer"},
		{"investigation", "r-investigation", tokAlice, "", http.StatusConflict, api.CodeNoAnswer, "presented no answer"},
		{"answer without a statement", "r-nosql", tokAlice, "", http.StatusConflict, api.CodeNoAnswer, "no statement"},
		{"unknown run", "r-nobody", tokAlice, "", http.StatusNotFound, contracts.CodeRunNotFound, "r-nobody"},
		{"invalid run id", "a.b", tokAlice, "", http.StatusBadRequest, contracts.CodeInvalidID, "a.b"},
		// A foreign run reads as a missing one, as GET /api/agent/runs/{id} has it.
		{"another actor's run", "r-auto", tokBob, "", http.StatusNotFound, contracts.CodeRunNotFound, "r-auto"},
		{"an admin is no owner", "r-auto", tokAdmin, "", http.StatusNotFound, contracts.CodeRunNotFound, "r-auto"},
		{"no token", "r-auto", "", "", http.StatusUnauthorized, contracts.CodeUnauthorized, ""},
		{"a body", "r-auto", tokAlice, `{"sql":"DELETE FROM orders"}`, http.StatusBadRequest, api.CodeHandoverNoBody, "takes none"},
		{"an empty object", "r-auto", tokAlice, `{}`, http.StatusBadRequest, api.CodeHandoverNoBody, "takes none"},
		{"a body on another's run", "r-auto", tokBob, `{}`, http.StatusBadRequest, api.CodeHandoverNoBody, "takes none"},
		{"connection repointed since the run", "r-repointed", tokAlice, "", http.StatusConflict, api.CodeConnectionChanged, "another database"},
		{"run recorded before identities", "r-no-identity", tokAlice, "", http.StatusConflict, api.CodeConnectionUnverified, "recorded no identity"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := e.call(http.MethodPost, api.HandoverPath(tc.run), tc.token, tc.body)
			er := wantError(t, status, body, tc.status, tc.code)
			if !strings.Contains(er.Message, tc.says) || er.Fix == "" && tc.status != http.StatusUnauthorized {
				t.Fatalf("%+v does not say %q, or has no fix", er, tc.says)
			}
		})
	}
	t.Run("client", func(t *testing.T) {
		_, err := e.client(tokAlice).Handover(e.ctx, "r-applied")
		if ae := apiErr(t, err, http.StatusConflict, api.CodeNotAutoExecuted); !strings.Contains(ae.Message, warning) {
			t.Fatalf("message %q lacks the warning", ae.Message)
		}
	})
	t.Run("only POST", func(t *testing.T) {
		status, _, body := e.call(http.MethodGet, api.HandoverPath("r-auto"), tokAlice, "")
		wantError(t, status, body, http.StatusMethodNotAllowed, api.CodeMethodNotAllowed)
	})
	select {
	case req := <-asked:
		t.Fatalf("a refused handover reached the executor: %+v", req)
	default:
	}
}

// TestHandoverRequest: the replay the gateway sends names the run's
// connection, the answer's statement and the agent-handover profile, and
// nothing of the caller's; its rows come back in POST /api/query's shape.
func TestHandoverRequest(t *testing.T) {
	e := readyEnv(t)
	e.answeredRun("r-auto", alice, handoverSQL, &contracts.AnswerComposed{SQL: handoverSQL, Handover: contracts.HandoverAutoExecuted})
	st, err := artifacts.New(e.ctx, e.js)
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan contracts.ExecRequest, 1)
	e.respond(contracts.ExecSubject(contracts.EngineSQLite, contracts.OpRead), func(data []byte) any {
		var req contracts.ExecRequest
		if err := json.Unmarshal(data, &req); err != nil {
			t.Error(err)
		}
		asked <- req
		sum := contracts.ArtifactSummary{CorrelationID: "h1", Columns: []contracts.Column{{Name: "country"}, {Name: "sum(total)"}}, Rows: 2}
		if err := st.Put(e.ctx, contracts.Artifact{ArtifactSummary: sum, ConnectionID: req.ConnectionID, Profile: req.Profile,
			SQL: req.SQL, Data: [][]any{{"DE", 10}, {"FR", 7}}}); err != nil {
			t.Error(err)
		}
		return contracts.ExecReply{Status: contracts.ExecOK, Artifact: &sum, DurationMs: 3}
	})
	got, err := e.client(tokAlice).Handover(e.ctx, "r-auto")
	if err != nil {
		t.Fatal(err)
	}
	req := <-asked
	if req.Profile != contracts.ProfileAgentHandover || req.SQL != handoverSQL || req.ConnectionID != "shop" ||
		req.RunID != "" || !strings.HasPrefix(req.StepID, "h") || req.MaxRows != 0 || len(req.Params) != 0 {
		t.Fatalf("exec request %+v", req)
	}
	if got.RunID != "r-auto" || got.ConnectionID != "shop" || got.SQL != handoverSQL || got.RowCount != 2 ||
		len(got.Rows) != 2 || got.Rows[0][0] != "DE" || got.DurationMs != 3 || got.Truncated {
		t.Fatalf("answer %+v", got)
	}

	// The ledger is untouched: the replay is no event of the run.
	entries, err := e.led.Read(e.ctx, "r-auto")
	if err != nil {
		t.Fatal(err)
	}
	if last := entries[len(entries)-1]; last.Kind != contracts.KindRunFinished {
		t.Fatalf("the ledger gained %s", last.Kind)
	}
}

// TestHandoverConnectionIdentity: the replay goes to the executor only when
// the connection still reaches the database the run read; an executor that
// publishes no identity cannot show it, and the route refuses before it
// asks. Repointing the connection back makes the same run replayable.
func TestHandoverConnectionIdentity(t *testing.T) {
	e := readyEnv(t)
	asked := make(chan contracts.ExecRequest, 4)
	e.respond(contracts.ExecSubject(contracts.EngineSQLite, contracts.OpRead), func(data []byte) any {
		var req contracts.ExecRequest
		_ = json.Unmarshal(data, &req)
		asked <- req
		return contracts.ExecReply{Status: contracts.ExecRefused, Refusal: &contracts.Refusal{Code: "probe", Message: "reached the executor", Fix: "x"}}
	})
	e.answeredRun("r-auto", alice, handoverSQL, &contracts.AnswerComposed{SQL: handoverSQL, Handover: contracts.HandoverAutoExecuted})
	if rec, err := e.client(tokAlice).Run(e.ctx, "r-auto"); err != nil || rec.ConnectionIdentity != "id-shop" {
		t.Fatalf("the record's connection identity: %q %v", rec.ConnectionIdentity, err)
	}
	for _, c := range []struct {
		name     string
		identity string
		status   int
		code     contracts.Code
		asked    bool
	}{
		{"repointed to another database", "id-staging", http.StatusConflict, api.CodeConnectionChanged, false},
		{"an executor that publishes no identity", "", http.StatusConflict, api.CodeConnectionUnverified, false},
		{"pointed back", "id-shop", http.StatusUnprocessableEntity, "probe", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.putConnection(contracts.ConnectionDescriptor{ID: "shop", Engine: contracts.EngineSQLite, Identity: c.identity})
			status, _, body := e.call(http.MethodPost, api.HandoverPath("r-auto"), tokAlice, "")
			er := wantError(t, status, body, c.status, c.code)
			if er.Fix == "" {
				t.Errorf("%+v has no fix", er)
			}
			select {
			case req := <-asked:
				if !c.asked {
					t.Fatalf("a refused handover reached the executor: %+v", req)
				}
			default:
				if c.asked {
					t.Fatal("the handover did not reach the executor")
				}
			}
		})
	}
}
