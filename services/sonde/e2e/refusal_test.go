package e2e

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

func countOrders(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM orders").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRefusalsReachTheModelAndTheRunRecovers drives every refusal path of the
// run loop in one run: a write, an unknown tool, malformed arguments, a
// database error, and a report citing evidence the run never produced.
func TestRefusalsReachTheModelAndTheRunRecovers(t *testing.T) {
	const good = "SELECT COUNT(*) AS n FROM orders"
	var goodID string
	script := modeltest.ScriptFunc(func(req modeltest.ChatRequest) (modeltest.Reply, error) {
		switch req.AssistantTurns() {
		case 0:
			return readCall("w", "DELETE FROM orders"), nil
		case 1:
			return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "x", Name: "drop_table", Arguments: `{"table":"orders"}`}}}, nil
		case 2:
			return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "y", Name: "run_read_query", Arguments: `{"sql":"select 1","limit":5}`}}}, nil
		case 3:
			return readCall("m", "SELECT * FROM no_such_table"), nil
		case 4:
			return readCall("g", good), nil
		case 5:
			if ids := modeltest.CitedIDs(req.LastToolResults()[0].Content); len(ids) == 1 {
				goodID = ids[0]
			}
			return reportCall("r1", "c_forged"), nil
		default:
			return reportCall("r2", goodID), nil
		}
	})
	s := stacktest.Start(t, stacktest.Options{Script: script})
	before := countOrders(t, s.DBPath)
	c := s.Client("")
	started := startRun(t, c, "count orders, the hard way")
	es := stacktest.Follow(t, c, started.RunID)
	rec := ledger.Fold(started.RunID, es)
	t.Logf("ledger: %v", kinds(es))

	wantCodes := []string{"not_a_select", "unknown_tool", "invalid_arguments", "unresolved_evidence"}
	var codes []string
	var dbErr *contracts.DBError
	for _, st := range rec.Steps {
		if st.Refusal != nil {
			codes = append(codes, string(st.Refusal.Code))
		}
		if st.DBError != nil {
			dbErr = st.DBError
		}
	}
	if strings.Join(codes, ",") != strings.Join(wantCodes, ",") {
		t.Fatalf("refusal codes %v, want %v", codes, wantCodes)
	}
	if dbErr == nil || dbErr.Class != contracts.DBMissingObject {
		t.Fatalf("database error %+v, want missing-object", dbErr)
	}
	if rec.Spent.Repairs != 1 {
		t.Fatalf("repairs %d: only the database failure counts", rec.Spent.Repairs)
	}
	if rec.Status != contracts.StatusSucceeded || rec.GoalVerdict.Outcome != contracts.VerdictAnswered {
		t.Fatalf("run ended %s %+v", rec.Status, rec.GoalVerdict)
	}
	if len(rec.Report) != 1 || rec.Report[0].Evidence[0].CorrelationID != goodID {
		t.Fatalf("report %+v does not cite %s", rec.Report, goodID)
	}
	// Every refusal told the model how to fix it.
	reqs := modelRequests(s)
	for i, r := range reqs[1:6] {
		res := r.LastToolResults()
		if len(res) != 1 || !strings.Contains(res[0].Content, "Refused") && !strings.Contains(res[0].Content, "database failed") && !strings.Contains(res[0].Content, "Result of the read") {
			t.Errorf("turn %d result: %+v", i+2, res)
		}
	}
	if after := countOrders(t, s.DBPath); after != before {
		t.Fatalf("orders went from %d to %d", before, after)
	}
}

// TestModelFailureEndsTheRunClassified: a provider that rejects the key ends
// the run failed with the label, never the vendor's words.
func TestModelFailureEndsTheRunClassified(t *testing.T) {
	script := modeltest.ScriptFunc(func(modeltest.ChatRequest) (modeltest.Reply, error) {
		return modeltest.Reply{Status: 401, ErrorCode: "invalid_api_key", ErrorMessage: "Incorrect API key sk-secret-123 for host internal.example"}, nil
	})
	s := stacktest.Start(t, stacktest.Options{Script: script})
	c := s.Client("")
	started := startRun(t, c, "anything")
	stacktest.Follow(t, c, started.RunID)
	rec, err := c.Run(context.Background(), started.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != contracts.StatusFailed || rec.Reason != contracts.ReasonModelUnauthorized {
		t.Fatalf("status %s reason %s", rec.Status, rec.Reason)
	}
	if v := rec.GoalVerdict; v == nil || v.Outcome != contracts.VerdictUnanswered || v.Unmet[0] != "no-report" {
		t.Fatalf("verdict %+v", rec.GoalVerdict)
	}
	if strings.Contains(rec.Detail, "sk-secret") || strings.Contains(rec.Detail, "internal.example") {
		t.Fatalf("vendor text reached the record: %q", rec.Detail)
	}
}

// TestModelThatNeverReportsEndsUnanswered: prose twice without a tool ends
// the run model-stopped, unanswered.
func TestModelThatNeverReportsEndsUnanswered(t *testing.T) {
	script := modeltest.ScriptFunc(func(modeltest.ChatRequest) (modeltest.Reply, error) {
		return modeltest.Reply{Text: "I think the answer is 42."}, nil
	})
	s := stacktest.Start(t, stacktest.Options{Script: script})
	c := s.Client("")
	started := startRun(t, c, "anything")
	rec := ledger.Fold(started.RunID, stacktest.Follow(t, c, started.RunID))
	if rec.Status != contracts.StatusFailed || rec.StopReason != contracts.StopModelStopped {
		t.Fatalf("status %s stop %s", rec.Status, rec.StopReason)
	}
	if v := rec.GoalVerdict; v == nil || v.Outcome != contracts.VerdictUnanswered {
		t.Fatalf("verdict %+v", v)
	}
	// The nudge reached the model between the two prose turns.
	reqs := modelRequests(s)
	if len(reqs) != 2 || !strings.Contains(reqs[1].LastUserText(), "compose_report") {
		t.Fatalf("%d requests; second ends with %q", len(reqs), reqs[len(reqs)-1].LastUserText())
	}
}

// TestAFailedStatementIsNotRunAgainUnderAnotherSpelling: the repair ledger is
// keyed on the guard's canonical fingerprint, so the same failing statement
// re-spelled is refused before the database and costs no repair.
func TestAFailedStatementIsNotRunAgainUnderAnotherSpelling(t *testing.T) {
	script := modeltest.ScriptFunc(func(req modeltest.ChatRequest) (modeltest.Reply, error) {
		switch req.AssistantTurns() {
		case 0:
			return readCall("a", "SELECT no_such_column FROM orders"), nil
		case 1:
			return readCall("b", "select NO_SUCH_COLUMN\n  from orders -- once more"), nil
		default:
			return modeltest.Reply{Text: "giving up"}, nil
		}
	})
	s := stacktest.Start(t, stacktest.Options{Script: script})
	c := s.Client("")
	started := startRun(t, c, "anything")
	rec := ledger.Fold(started.RunID, stacktest.Follow(t, c, started.RunID))
	if len(rec.Steps) < 2 {
		t.Fatalf("steps %+v", rec.Steps)
	}
	first, second := rec.Steps[0], rec.Steps[1]
	if first.Status != contracts.StepFailed || first.Fingerprint == "" {
		t.Fatalf("first step %+v", first)
	}
	if second.StepID == first.StepID {
		t.Fatal("the re-spelled statement is the same step: the test proves nothing")
	}
	if second.Status != contracts.StepRefused || second.Refusal.Code != contracts.RefuseAlreadyFailed {
		t.Fatalf("second step %+v, want refused already_failed", second)
	}
	if rec.Spent.Repairs != 1 {
		t.Fatalf("repairs %d, want 1: a refusal consumes none", rec.Spent.Repairs)
	}
}
