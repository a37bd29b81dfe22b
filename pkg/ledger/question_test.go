package ledger

import (
	"testing"

	"github.com/sondehq/sonde/contracts"
)

// TestFoldKeepsTheQuestion (issue 18, item 10): the record carries the
// question a run stopped on, as run-finished recorded it, and a turn
// refused as an unreadable call is not the run's closing statement.
func TestFoldKeepsTheQuestion(t *testing.T) {
	es := []contracts.Entry{
		entry(t, contracts.KindRunStarted, contracts.RunStarted{Mode: contracts.ModeAgent, Objective: "Which genre sells best?"}),
		entry(t, contracts.KindClosingStatement, contracts.ClosingStatement{Turn: 1, Text: "Which year?"}),
		entry(t, contracts.KindClosingStatement, contracts.ClosingStatement{Turn: 2, Text: `<tool_call>{"name":`,
			Refused: &contracts.Refusal{Code: "call_cut_short", Message: "cut", Fix: "shorter"}}),
		entry(t, contracts.KindRunFinished, contracts.RunFinished{Status: contracts.StatusFailed, StopReason: contracts.StopQuestion, Question: "Which year?"}),
	}
	rec := Fold("r1", es)
	if rec.Question != "Which year?" || rec.Closing != "Which year?" || rec.StopReason != contracts.StopQuestion {
		t.Fatalf("question %q closing %q stop %s", rec.Question, rec.Closing, rec.StopReason)
	}
}
