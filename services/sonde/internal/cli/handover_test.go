package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/gateway/client"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// TestHandoverCommand: sonde handover prints the replayed rows as sonde
// query does, and a refusal with exit status 2.
func TestHandoverCommand(t *testing.T) {
	alice := contracts.Actor{ID: "alice", Role: contracts.RoleMember}
	s := stacktest.Start(t, stacktest.Options{NoOrchestrator: true, Tokens: map[string]contracts.Actor{"tok-a": alice}})
	ctx := context.Background()
	led, err := ledger.Open(ctx, s.NATS.JetStream(), ledger.WithWriter("test"))
	if err != nil {
		t.Fatal(err)
	}
	// The runs read the demo database as it is published now: a replay is
	// only ever made on the database a run read.
	conns, err := client.New(s.URL, "tok-a").Connections(ctx)
	if err != nil || len(conns) == 0 {
		t.Fatalf("connections: %v %v", conns, err)
	}
	identity := conns[0].Identity
	// A finished data-analysis run whose answer says h.
	run := func(id, sql string, h contracts.Handover, warning string) {
		w := led.Writer(id, 0, nil)
		add := func(kind contracts.EventKind, payload any) {
			if _, err := w.Append(ctx, kind, payload); err != nil {
				t.Fatal(err)
			}
		}
		add(contracts.KindRunStarted, contracts.RunStarted{Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowDataAnalysis,
			AutoExecute: true, Objective: "orders", ConnectionID: "demo", ConnectionIdentity: identity, Actor: alice, Tools: []string{"present_answer"}})
		add(contracts.KindAnswerComposed, contracts.AnswerComposed{
			ToolCall:      contracts.ToolCall{Turn: 1, CallID: "c2", Tool: "present_answer", Arguments: json.RawMessage(`{}`)},
			CorrelationID: "c1", SQL: sql, Presentation: contracts.Presentation{Kind: contracts.PresentTable},
			Handover: h, HandoverWarning: warning})
		add(contracts.KindRunFinished, contracts.RunFinished{Status: contracts.StatusSucceeded, StopReason: contracts.StopReportComposed})
	}
	run("rauto", "SELECT id, status\nFROM orders WHERE id <= 2 ORDER BY id", contracts.HandoverAutoExecuted, "")
	run("rapplied", "SELECT id FROM orders", contracts.HandoverApplied, "the plan reads orders by a full scan (plan-risky)")
	o := runsOptions{server: s.URL, token: "tok-a"}

	var out, errOut bytes.Buffer
	if err := handover(ctx, &out, &errOut, o, "rauto"); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	wantOutput(t, "handover", out.String(), "rauto", "demo", "agent-handover",
		"SELECT id, status FROM orders WHERE id <= 2 ORDER BY id", "id  status", "(2 rows)")

	out.Reset()
	oj := o
	oj.jsonOut = true
	if err := handover(ctx, &out, &errOut, oj, "rauto"); err != nil {
		t.Fatal(err)
	}
	var res api.HandoverResponse
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.RowCount != 2 || res.RunID != "rauto" {
		t.Fatalf("json: %v %s", err, out.String())
	}

	out.Reset()
	errOut.Reset()
	err = handover(ctx, &out, &errOut, o, "rapplied")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != ExitRefused {
		t.Fatalf("applied: %v, want exit status %d", err, ExitRefused)
	}
	wantOutput(t, "applied", errOut.String(), string(api.CodeNotAutoExecuted), "(plan-risky)")

	err = handover(ctx, &out, &errOut, o, "rnosuchrun")
	if !errors.As(err, &ee) || ee.code != ExitRefused || !strings.Contains(err.Error(), string(contracts.CodeRunNotFound)) {
		t.Fatalf("unknown run: %v", err)
	}
}
