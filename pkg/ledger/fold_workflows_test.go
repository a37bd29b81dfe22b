package ledger

import (
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
)

// TestRecordedToolsCountTheirTurn: a turn whose only call reaches no
// database (a comparison, a recommendation, an answer) is a turn spent, and
// its usage is counted once; otherwise the next turn would reuse its number.
func TestRecordedToolsCountTheirTurn(t *testing.T) {
	u := &contracts.Usage{InputTokens: 10, OutputTokens: 1}
	tc := func(turn int, tool string) contracts.ToolCall {
		return contracts.ToolCall{Turn: turn, CallID: tool, Tool: tool, Usage: u}
	}
	var es []contracts.Entry
	for _, p := range []struct {
		kind contracts.EventKind
		v    any
	}{
		{contracts.KindRunStarted, contracts.RunStarted{Mode: contracts.ModeAgent}},
		{contracts.KindPlanComparison, contracts.PlanComparison{ToolCall: tc(1, "compare_plans")}},
		{contracts.KindRecommendation, contracts.Recommendation{ToolCall: tc(2, "recommend_change")}},
		{contracts.KindAnswerComposed, contracts.AnswerComposed{ToolCall: tc(3, "present_answer")}},
	} {
		e, err := contracts.NewEntry("r", p.kind, time.Unix(0, 0), p.v)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	r := Fold("r", es)
	if r.Spent.Turns != 3 || r.Usage.InputTokens != 30 || len(r.Steps) != 3 || r.Answer == nil {
		t.Fatalf("turns %d, usage %+v, steps %d", r.Spent.Turns, r.Usage, len(r.Steps))
	}
}
