package stacktest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/modelturn"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// readThenReport reads twice, a turn each, then reports citing both reads.
func readThenReport(req modeltest.ChatRequest) (modeltest.Reply, error) {
	read := func(sql string) modeltest.Reply {
		b, _ := json.Marshal(map[string]string{"sql": sql, "reason": "count"})
		return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{Name: "run_read_query", Arguments: string(b)}}}
	}
	switch req.AssistantTurns() {
	case 0:
		return read("SELECT COUNT(*) AS n FROM orders"), nil
	case 1:
		return read("SELECT COUNT(*) AS n FROM customers"), nil
	}
	var refs []string
	for _, m := range req.ToolMessages() {
		for _, id := range modeltest.CitedIDs(m.Content) {
			refs = append(refs, fmt.Sprintf(`{"source":"artifact","correlationId":%q}`, id))
		}
	}
	if len(refs) < 2 {
		return modeltest.Reply{Text: "nothing to cite"}, nil
	}
	args := fmt.Sprintf(`{"claims":[{"text":"The shop has orders and customers.","evidence":[%s,%s]}]}`, refs[0], refs[1])
	return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{Name: "compose_report", Arguments: args}}}, nil
}

// TestEveryVendorDrivesARun: a scripted model answers a run through each
// vendor's real SDK and wire format.
func TestEveryVendorDrivesARun(t *testing.T) {
	for _, vendor := range stacktest.Vendors {
		t.Run(vendor, func(t *testing.T) {
			s := stacktest.Start(t, stacktest.Options{Script: modeltest.ScriptFunc(readThenReport), Vendor: vendor})
			c := s.Client("")
			started, err := c.StartRun(context.Background(), api.StartRunRequest{Objective: "How big is the shop?", ConnectionID: "demo"})
			if err != nil {
				t.Fatal(err)
			}
			rec := ledger.Fold(started.RunID, stacktest.Follow(t, c, started.RunID))
			if rec.StopReason != contracts.StopReportComposed || rec.GoalVerdict == nil || rec.GoalVerdict.Outcome != contracts.VerdictAnswered {
				t.Fatalf("run ended %s, verdict %+v", rec.StopReason, rec.GoalVerdict)
			}
			if s.Model.Vendor() != vendor {
				t.Fatalf("the stack's model speaks %s, want %s", s.Model.Vendor(), vendor)
			}
		})
	}
}

// TestGeminiSignatureRoundTripsThroughTheLedger: the thoughtSignature Gemini
// puts on each turn's call is recorded with the call in the ledger and sent
// back on that call's part in every later turn — the replay refuses, as
// Gemini 3 does, a history whose signed call lacks it, so a run that loses
// one fails on its next turn.
func TestGeminiSignatureRoundTripsThroughTheLedger(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{Script: modeltest.ScriptFunc(readThenReport), Vendor: modeltest.VendorGemini})
	c := s.Client("")
	started, err := c.StartRun(context.Background(), api.StartRunRequest{Objective: "How big is the shop?", ConnectionID: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	es := stacktest.Follow(t, c, started.RunID)
	rec := ledger.Fold(started.RunID, es)
	if rec.StopReason != contracts.StopReportComposed {
		t.Fatalf("run ended %s (%s): a signed call came back without its signature", rec.StopReason, rec.Detail)
	}
	recorded := map[string]string{} // tool call → signature, as the ledger holds them
	for _, e := range es {
		if e.Kind != contracts.KindToolInvoked {
			continue
		}
		v, err := e.Decode()
		if err != nil {
			t.Fatal(err)
		}
		tc := v.(*contracts.ToolInvoked).ToolCall
		if tc.Signature == "" {
			t.Errorf("turn %d's call %s was recorded without the signature Gemini put on it", tc.Turn, tc.Tool)
		}
		recorded[string(tc.Arguments)] = tc.Signature
	}
	if len(recorded) != 2 {
		t.Fatalf("%d reads recorded, want 2", len(recorded))
	}
	var turns int
	for _, req := range s.Model.Requests() {
		if req.HasTool(modelturn.ProbeTool) {
			continue
		}
		turns++
		for _, call := range req.ToolCalls() {
			if call.Function.Name == "run_read_query" && call.Signature == "" {
				t.Errorf("turn %d sent a read back without its signature", turns)
			}
		}
	}
	if turns != 3 {
		t.Fatalf("%d model turns, want 3", turns)
	}
}

// TestContextRefusalEndsTheRunSayingSo: a model whose window the transcript
// outgrows refuses the turn in its vendor's own words; on every vendor the
// run ends model-context-exceeded with a sentence about the window, never
// "No usable model: check the LLM_* settings".
func TestContextRefusalEndsTheRunSayingSo(t *testing.T) {
	for _, vendor := range stacktest.Vendors {
		t.Run(vendor, func(t *testing.T) {
			// The probe fits in 1000 tokens; the first turn, with the rules
			// and the schema snapshot, does not.
			s := stacktest.Start(t, stacktest.Options{Script: modeltest.ScriptFunc(readThenReport), Vendor: vendor,
				ModelOptions: []modeltest.Option{modeltest.WithContextWindow(1000)}})
			c := s.Client("")
			started, err := c.StartRun(context.Background(), api.StartRunRequest{Objective: "How big is the shop?", ConnectionID: "demo"})
			if err != nil {
				t.Fatal(err)
			}
			rec := ledger.Fold(started.RunID, stacktest.Follow(t, c, started.RunID))
			if rec.Status != contracts.StatusFailed || rec.Reason != contracts.ReasonModelContextExceeded {
				t.Fatalf("run ended %s %s (%s), want failed %s", rec.Status, rec.Reason, rec.Detail, contracts.ReasonModelContextExceeded)
			}
			if !strings.Contains(rec.Detail, "context window") || strings.Contains(rec.Detail, "LLM_") {
				t.Fatalf("the run says %q", rec.Detail)
			}
		})
	}
}
