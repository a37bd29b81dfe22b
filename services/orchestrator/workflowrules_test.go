package orchestrator

import (
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
)

// TestPresentAnswerRefusesAProfile: data-analysis offers profile_table
// beside run_read_query, and a profile is counts the server wrote, not a
// reading of the data: presenting it is refused answer_not_a_data_read
// (its own code, not a missing statement), even as a table; the read that
// follows is the answer.
func TestPresentAnswerRefusesAProfile(t *testing.T) {
	h := newHarness(t, Config{})
	h.model.script = calls(
		tc(policy.ToolProfileTable, `{"table":"sales","depth":"basic","fromColumn":null}`),      // r1: a profile
		tc(policy.ToolRunReadQuery, `{"sql":"SELECT country, total FROM sales","reason":null}`), // r2
		tc(policy.ToolPresentAnswer, `{"artifact":"r1","presentation":{"kind":"table","spec":null}}`),
		tc(policy.ToolPresentAnswer, `{"artifact":"r1","presentation":{"kind":"chart","spec":{"type":"bar","x":"column","y":["present"],"caption":"c"}}}`),
		tc(policy.ToolPresentAnswer, `{"artifact":"r2","presentation":{"kind":"table","spec":null}}`),
		tc(policy.ToolComposeReport, `{"claims":[{"text":"the USA leads","evidence":[{"source":"artifact","correlationId":"r2"}]}]}`),
	)
	profile := &contracts.TableProfile{Table: contracts.NameRef{Schema: "main", Name: "sales"}, Depth: contracts.DepthBasic, Rows: 3,
		Columns: []contracts.ColumnProfile{{Name: "country", Present: 3}, {Name: "total", Present: 2}}}
	h.exec.answer = func(n int, req contracts.ExecRequest) (contracts.ExecReply, error) {
		if n == 0 {
			r := h.stored(t, req, []string{"column", "present"}, [][]any{{"country", 3.0}, {"total", 2.0}}, nil, true)
			r.Profile = profile
			return r, nil
		}
		return h.stored(t, req, []string{"country", "total"}, [][]any{{"USA", 523.06}, {"Canada", 303.96}}, nil, true), nil
	}
	entries, rec := h.driveWorkflow(t, "ans-profile", contracts.WorkflowDataAnalysis, false, contracts.EngineSQLite)
	want := joinCodes([]contracts.Code{contracts.RefuseAnswerNotADataRead, contracts.RefuseAnswerNotADataRead})
	if got := joinCodes(refusalCodes(t, entries)); got != want {
		t.Fatalf("refusals %s, want %s", got, want)
	}
	if a := rec.Answer; a == nil || a.CorrelationID != "r2" || a.SQL != "SELECT country, total FROM sales" {
		t.Fatalf("answer %+v", a)
	}
	if v := rec.GoalVerdict; v == nil || v.Outcome != contracts.VerdictAnswered {
		t.Errorf("verdict %+v", v)
	}
}

// TestOperationsRunIsPackedAsNamesAndIndexes: an operations run's schema
// snapshot names tables and their indexes only (what a reading names),
// never a column; an investigation of the same database is packed with
// its columns. The packing follows the workflow's row.
func TestOperationsRunIsPackedAsNamesAndIndexes(t *testing.T) {
	for _, w := range []contracts.WorkflowType{contracts.WorkflowOperations, contracts.WorkflowInvestigation} {
		h := newHarness(t, Config{})
		h.model.script = calls()
		entries, _ := h.driveWorkflow(t, "pack-"+string(w), w, false, contracts.EngineSQLite)
		text := captured(t, entries).Text
		namesOnly := strings.Contains(text, `"main"."t": no indexes`) && !strings.Contains(text, "INTEGER")
		if namesOnly != (w == contracts.WorkflowOperations) {
			t.Errorf("%s: packed as names and indexes: %v, want %v:\n%s", w, namesOnly, w == contracts.WorkflowOperations, text)
		}
	}
}
