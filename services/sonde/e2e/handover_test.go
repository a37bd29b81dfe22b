package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/gateway/client"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// handoverStack is a stack with two members and no orchestrator: the runs
// are written to the ledger by hand, as a finished data-analysis run writes
// them, and the route replays them on the real SQLite executor.
type handoverStack struct {
	*stacktest.Stack
	t   *testing.T
	led *ledger.Ledger
	// identity is the demo connection's, as its executor publishes it: what
	// a run on it records.
	identity string
}

var (
	handoverAlice = contracts.Actor{ID: "alice", Role: contracts.RoleMember}
	handoverBob   = contracts.Actor{ID: "bob", Role: contracts.RoleMember}
)

func startHandoverStack(t *testing.T) *handoverStack {
	s := stacktest.Start(t, stacktest.Options{NoOrchestrator: true,
		Tokens: map[string]contracts.Actor{"tok-alice": handoverAlice, "tok-bob": handoverBob}})
	led, err := ledger.Open(context.Background(), s.NATS.JetStream(), ledger.WithWriter("test"))
	if err != nil {
		t.Fatal(err)
	}
	conns, err := s.Client("tok-alice").Connections(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h := &handoverStack{Stack: s, t: t, led: led}
	for _, d := range conns {
		if d.ID == "demo" {
			h.identity = d.Identity
		}
	}
	if h.identity == "" {
		t.Fatalf("the demo connection publishes no identity: %+v", conns)
	}
	return h
}

// run writes a finished data-analysis run of alice on the demo connection
// that read sql and presented it with handover h ("" presents no answer).
func (h *handoverStack) run(runID, sql string, handover contracts.Handover) {
	h.t.Helper()
	h.runOn(runID, h.identity, sql, handover)
}

// runOn is run with the connection identity the run's header records.
func (h *handoverStack) runOn(runID, identity, sql string, handover contracts.Handover) {
	h.t.Helper()
	ctx := context.Background()
	w := h.led.Writer(runID, 0, nil)
	add := func(kind contracts.EventKind, payload any) {
		h.t.Helper()
		if _, err := w.Append(ctx, kind, payload); err != nil {
			h.t.Fatal(err)
		}
	}
	add(contracts.KindRunStarted, contracts.RunStarted{Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowDataAnalysis,
		AutoExecute: true, Objective: "orders by status", ConnectionID: "demo", ConnectionIdentity: identity, Engine: contracts.EngineSQLite,
		Actor: handoverAlice, Tools: []string{"run_read_query", "inspect_plan", "present_answer"}})
	add(contracts.KindDriverResolved, contracts.DriverResolved{Provider: "demo", Model: "replay", Demo: true, Drive: 1})
	args, _ := json.Marshal(map[string]string{"sql": sql})
	read := contracts.ToolCall{Turn: 1, CallID: "c1", Tool: "run_read_query", Arguments: args}
	add(contracts.KindToolInvoked, contracts.ToolInvoked{ToolCall: read, StepID: "s1", CorrelationID: "c1"})
	add(contracts.KindToolCompleted, contracts.ToolCompleted{ToolCall: read, StepID: "s1", Outcome: contracts.OutcomeOK,
		Artifact: &contracts.ArtifactSummary{CorrelationID: "c1", Rows: 3}})
	if handover != "" {
		present := contracts.ToolCall{Turn: 2, CallID: "c2", Tool: "present_answer",
			Arguments: json.RawMessage(`{"artifact":"c1","presentation":{"kind":"table"}}`)}
		ans := contracts.AnswerComposed{ToolCall: present, CorrelationID: "c1", SQL: sql,
			Presentation: contracts.Presentation{Kind: contracts.PresentTable}, Handover: handover}
		if handover == contracts.HandoverApplied {
			ans.HandoverWarning = "The statement was placed in the editor but not run: the plan reads orders by a full scan, not by an index (every step a SEARCH) (plan-risky)."
		}
		add(contracts.KindAnswerComposed, ans)
	}
	add(contracts.KindRunFinished, contracts.RunFinished{Status: contracts.StatusSucceeded, StopReason: contracts.StopReportComposed})
}

// post sends the handover request raw, with an optional body.
func (h *handoverStack) post(runID, token, body string) (int, api.ErrorBody) {
	h.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(http.MethodPost, h.URL+api.HandoverPath(runID), rd)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var eb api.ErrorBody
	_ = json.NewDecoder(resp.Body).Decode(&eb)
	return resp.StatusCode, eb
}

func fileDigest(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestHandoverReplaysOnTheRealExecutor: an auto-executed answer is replayed
// on the run's SQLite file under agent-handover; everything else is refused
// before or at the executor, and the database file and the ledger never
// change.
func TestHandoverReplaysOnTheRealExecutor(t *testing.T) {
	h := startHandoverStack(t)
	ctx := context.Background()
	alice := h.Client("tok-alice")
	before := fileDigest(t, h.DBPath)

	const answer = "SELECT id, status FROM orders WHERE id <= 3 ORDER BY id"
	h.run("rauto", answer, contracts.HandoverAutoExecuted)
	got, err := alice.Handover(ctx, "rauto")
	if err != nil {
		t.Fatal(err)
	}
	if got.SQL != answer || got.ConnectionID != "demo" || got.RunID != "rauto" || got.RowCount != 3 || got.Truncated ||
		len(got.Columns) != 2 || got.Columns[0].Name != "id" || fmt.Sprint(got.Rows[0][0]) != "1" || fmt.Sprint(got.Rows[2][0]) != "3" {
		t.Fatalf("replay %+v", got)
	}

	t.Run("500 rows answer, 501 are refused, not truncated", func(t *testing.T) {
		h.run("r500", "SELECT id FROM orders WHERE id <= 500", contracts.HandoverAutoExecuted)
		got, err := alice.Handover(ctx, "r500")
		if err != nil || got.RowCount != 500 || got.Truncated {
			t.Fatalf("500 rows: %v %d truncated=%v", err, got.RowCount, got.Truncated)
		}
		h.run("r501", "SELECT id FROM orders WHERE id <= 501", contracts.HandoverAutoExecuted)
		_, err = alice.Handover(ctx, "r501")
		wantAPIError(t, err, http.StatusUnprocessableEntity, string(contracts.RefuseResultTooLarge))
	})

	t.Run("a forged ledger's write is refused and changes nothing", func(t *testing.T) {
		// A ledger a writer forged: answers that would write, recorded as
		// auto-executed. The executor's guard and the read-only connection
		// stand between them and the file.
		forged := []struct{ sql, code string }{
			{"UPDATE orders SET status = 'refunded' WHERE id = 1", string(contracts.RefuseNotASelect)},
			{"DELETE FROM orders", string(contracts.RefuseNotASelect)},
			{"select 1; delete from orders", string(contracts.RefuseNotOneStatement)},
			{"pragma query_only = 0; delete from orders", string(contracts.RefuseNotASelect)},
			{"with d as (select 1) delete from orders", string(contracts.RefuseNotASelect)},
			{"with d as (select 1) insert into orders(id) select 9999 from d", string(contracts.RefuseNotASelect)},
			{"create temp table x(a)", string(contracts.RefuseNotASelect)},
			{"drop table orders", string(contracts.RefuseNotASelect)},
			{"attach database 'other.db' as o", string(contracts.RefuseNotASelect)},
			{"select writefile('x', 'y')", string(contracts.RefuseFunctionDenied)},
		}
		for i, f := range forged {
			id := fmt.Sprintf("rforged%d", i)
			h.run(id, f.sql, contracts.HandoverAutoExecuted)
			_, err := alice.Handover(ctx, id)
			wantAPIError(t, err, http.StatusUnprocessableEntity, f.code)
		}
	})

	t.Run("refusals before the executor", func(t *testing.T) {
		h.run("rapplied", answer, contracts.HandoverApplied)
		h.run("rnone", answer, contracts.HandoverNone)
		h.run("runanswered", answer, "")
		// The run read demo when it reached another database.
		h.runOn("rrepointed", "another-database", answer, contracts.HandoverAutoExecuted)
		cases := []struct {
			name, run, token, body string
			status                 int
			code                   string
		}{
			{"applied", "rapplied", "tok-alice", "", http.StatusConflict, string(api.CodeNotAutoExecuted)},
			{"not opened with autoExecute", "rnone", "tok-alice", "", http.StatusConflict, string(api.CodeNotAutoExecuted)},
			{"no answer", "runanswered", "tok-alice", "", http.StatusConflict, string(api.CodeNoAnswer)},
			{"connection repointed since", "rrepointed", "tok-alice", "", http.StatusConflict, string(api.CodeConnectionChanged)},
			{"unknown run", "rnosuchrun", "tok-alice", "", http.StatusNotFound, string(contracts.CodeRunNotFound)},
			{"another member's run", "rauto", "tok-bob", "", http.StatusNotFound, string(contracts.CodeRunNotFound)},
			{"unknown token", "rauto", "tok-mallory", "", http.StatusUnauthorized, string(contracts.CodeUnauthorized)},
			{"a statement in the body", "rauto", "tok-alice", `{"sql":"DELETE FROM orders"}`, http.StatusBadRequest, string(api.CodeHandoverNoBody)},
		}
		for _, tc := range cases {
			status, eb := h.post(tc.run, tc.token, tc.body)
			if status != tc.status || eb.Error.Code != contracts.Code(tc.code) {
				t.Errorf("%s: %d %+v, want %d %s", tc.name, status, eb.Error, tc.status, tc.code)
			}
		}
		_, eb := h.post("rapplied", "tok-alice", "")
		if !strings.Contains(eb.Error.Message, "(plan-risky)") {
			t.Errorf("409 lacks the gate's warning: %+v", eb.Error)
		}
	})

	if after := fileDigest(t, h.DBPath); !bytes.Equal(before[:], after[:]) {
		t.Fatal("the database file changed")
	}
	for _, side := range []string{"-journal", "-wal"} {
		if _, err := os.Stat(h.DBPath + side); err == nil {
			t.Errorf("%s was created", h.DBPath+side)
		}
	}
	// The replays wrote nothing to the run's ledger.
	entries, err := h.led.Read(ctx, "rauto")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 6 || entries[len(entries)-1].Kind != contracts.KindRunFinished {
		t.Fatalf("the ledger of rauto holds %d entries, last %s", len(entries), entries[len(entries)-1].Kind)
	}
}

func wantAPIError(t *testing.T, err error, status int, code string) {
	t.Helper()
	ae, ok := err.(*client.APIError)
	if !ok || ae.Status != status || ae.Code != contracts.Code(code) {
		t.Fatalf("err = %v, want %d %s", err, status, code)
	}
}
