package verdict

import (
	"slices"
	"testing"

	"github.com/sondehq/sonde/contracts"
)

// planLedger is a planning run's ledger: its header, then the given entries.
func planLedger(t *testing.T, w contracts.WorkflowType, es ...contracts.Entry) []contracts.Entry {
	t.Helper()
	h := entry(t, contracts.KindRunStarted, contracts.RunStarted{Mode: contracts.ModePlanning, WorkflowType: w, Engine: contracts.EngineSQLite})
	return append([]contracts.Entry{h}, es...)
}

func answer(t *testing.T, turn int, text string) contracts.Entry {
	return entry(t, contracts.KindClosingStatement, contracts.ClosingStatement{Turn: turn, Text: text})
}

func drafted(t *testing.T, p contracts.PlanStatementDrafted) contracts.Entry {
	return entry(t, contracts.KindPlanStatementDrafted, p)
}

var (
	checked   = contracts.IdentifierCheck{Status: contracts.IdentifiersChecked, ColumnsChecked: true}
	readDraft = contracts.PlanStatementDrafted{Turn: 1, SQL: "SELECT n FROM t", ReadOnly: true, Identifiers: checked}
)

func refusedDraft(turn int, sql string, code contracts.Code) contracts.PlanStatementDrafted {
	return contracts.PlanStatementDrafted{Turn: turn, SQL: sql, Refusal: &contracts.Refusal{Code: code, Message: "r", Fix: "f"},
		Identifiers: contracts.IdentifierCheck{Status: contracts.IdentifiersUnread}}
}

// TestVerifyPlanJudgesTheGuardsReading: a drafted statement is the
// deliverable only when the guard reads it as a read and its names are in
// the snapshot; the last draft is judged; an index is a query
// optimisation's deliverable, judged by its names.
func TestVerifyPlanJudgesTheGuardsReading(t *testing.T) {
	unknown := readDraft
	unknown.Identifiers.UnknownColumns = []string{`"main"."t"."missing"`}
	unknownTable := readDraft
	unknownTable.Identifiers.UnknownRelations = []string{`"main"."nowhere"`}
	refusedUnknown := refusedDraft(1, "DELETE FROM nowhere", contracts.RefuseNotASelect)
	refusedUnknown.Identifiers = contracts.IdentifierCheck{Status: contracts.IdentifiersChecked, UnknownRelations: []string{`"main"."nowhere"`}}
	unchecked := contracts.PlanStatementDrafted{Turn: 1, SQL: "SELECT n FROM t", Identifiers: contracts.IdentifierCheck{Status: contracts.IdentifiersUnread}}
	noInventory := readDraft
	noInventory.Identifiers = contracts.IdentifierCheck{Status: contracts.IdentifiersNoInventory}
	index := refusedDraft(1, "CREATE INDEX t_n ON t (n)", contracts.RefuseNotASelect)
	index.Identifiers = checked
	indexUnknown := index
	indexUnknown.Identifiers = contracts.IdentifierCheck{Status: contracts.IdentifiersChecked, UnknownColumns: []string{`"main"."t"."m"`}}
	second := readDraft
	second.Turn = 2
	const (
		inv = contracts.WorkflowInvestigation
		qo  = contracts.WorkflowQueryOptimization
	)
	cases := []struct {
		name    string
		w       contracts.WorkflowType
		entries []contracts.Entry
		outcome contracts.VerdictOutcome
		unmet   []string
	}{
		{"a read naming known things", inv, []contracts.Entry{answer(t, 1, "```sqlite\nSELECT n FROM t\n```"), drafted(t, readDraft)},
			contracts.VerdictAnswered, nil},
		{"a write the guard refuses", inv, []contracts.Entry{answer(t, 1, "x"), drafted(t, refusedDraft(1, "DELETE FROM t", contracts.RefuseNotASelect))},
			contracts.VerdictUnanswered, []string{UnmetPlanRefused}},
		{"a writable CTE", inv, []contracts.Entry{answer(t, 1, "x"), drafted(t, refusedDraft(1, "WITH d AS (DELETE FROM t RETURNING n) SELECT n FROM d", contracts.RefuseNotReadOnly))},
			contracts.VerdictUnanswered, []string{UnmetPlanRefused}},
		{"two statements", inv, []contracts.Entry{answer(t, 1, "x"), drafted(t, refusedDraft(1, "SELECT 1; SELECT 2", contracts.RefuseNotOneStatement))},
			contracts.VerdictUnanswered, []string{UnmetPlanRefused}},
		{"an unknown column", inv, []contracts.Entry{answer(t, 1, "x"), drafted(t, unknown)},
			contracts.VerdictUnanswered, []string{UnmetUnknownNames}},
		{"an unknown table", inv, []contracts.Entry{answer(t, 1, "x"), drafted(t, unknownTable)},
			contracts.VerdictUnanswered, []string{UnmetUnknownNames}},
		{"refused and unknown", inv, []contracts.Entry{answer(t, 1, "x"), drafted(t, refusedUnknown)},
			contracts.VerdictUnanswered, []string{UnmetPlanRefused, UnmetUnknownNames}},
		{"the guard could not be asked", inv, []contracts.Entry{answer(t, 1, "x"), drafted(t, unchecked)},
			contracts.VerdictUnanswered, []string{UnmetPlanUnchecked}},
		{"no inventory to check names against", inv, []contracts.Entry{answer(t, 1, "x"), drafted(t, noInventory)},
			contracts.VerdictAnswered, nil},
		{"the repaired draft is judged", inv, []contracts.Entry{answer(t, 1, "x"), drafted(t, refusedDraft(1, "DELETE FROM t", contracts.RefuseNotASelect)),
			answer(t, 2, "y"), drafted(t, second)}, contracts.VerdictAnswered, nil},
		{"a repair answered by prose leaves the refused draft", inv, []contracts.Entry{answer(t, 1, "x"), drafted(t, refusedDraft(1, "DELETE FROM t", contracts.RefuseNotASelect)),
			answer(t, 2, "I insist.")}, contracts.VerdictUnanswered, []string{UnmetPlanRefused}},
		{"a repair answered by NO STATEMENT", inv, []contracts.Entry{answer(t, 1, "x"), drafted(t, refusedDraft(1, "DELETE FROM t", contracts.RefuseNotASelect)),
			answer(t, 2, "NO STATEMENT: a read cannot delete.")}, contracts.VerdictAnswered, nil},
		{"NO STATEMENT", inv, []contracts.Entry{answer(t, 1, "NO STATEMENT: no visits table")}, contracts.VerdictAnswered, nil},
		{"prose only", inv, []contracts.Entry{answer(t, 1, "count them"), answer(t, 2, "really")}, contracts.VerdictUnanswered, []string{UnmetNoStatement}},
		{"no prose", inv, nil, contracts.VerdictUnanswered, []string{UnmetNoPlan}},
		{"an index for a query optimisation", qo, []contracts.Entry{answer(t, 1, "x"), drafted(t, index)}, contracts.VerdictAnswered, nil},
		{"an index naming an unknown column", qo, []contracts.Entry{answer(t, 1, "x"), drafted(t, indexUnknown)},
			contracts.VerdictUnanswered, []string{UnmetUnknownNames}},
		{"an index is no investigation's deliverable", inv, []contracts.Entry{answer(t, 1, "x"), drafted(t, index)},
			contracts.VerdictUnanswered, []string{UnmetPlanRefused}},
		{"an index statement the guard refused otherwise", qo, []contracts.Entry{answer(t, 1, "x"),
			drafted(t, refusedDraft(1, "CREATE INDEX t_n ON t (n)", contracts.RefuseUnparsable))}, contracts.VerdictUnanswered, []string{UnmetPlanRefused}},
		{"a DROP is no index", qo, []contracts.Entry{answer(t, 1, "x"), drafted(t, refusedDraft(1, "DROP INDEX t_n", contracts.RefuseNotASelect))},
			contracts.VerdictUnanswered, []string{UnmetPlanRefused}},
		{"an index with a second statement", qo, []contracts.Entry{answer(t, 1, "x"),
			drafted(t, refusedDraft(1, "CREATE INDEX t_n ON t (n); DELETE FROM t", contracts.RefuseNotASelect))}, contracts.VerdictUnanswered, []string{UnmetPlanRefused}},
		{"operations prose", contracts.WorkflowOperations, []contracts.Entry{answer(t, 1, "look at the locks")}, contracts.VerdictAnswered, nil},
	}
	for _, c := range cases {
		v := Verify(planLedger(t, c.w, c.entries...), false)
		if v.Rule != RulePlanning || v.Outcome != c.outcome || !slices.Equal(v.Unmet, c.unmet) && !(len(v.Unmet) == 0 && len(c.unmet) == 0) {
			t.Errorf("%s: %s %v, want %s %v", c.name, v.Outcome, v.Unmet, c.outcome, c.unmet)
		}
		if v.Unmet == nil {
			t.Errorf("%s: unmet must be an empty list, not null", c.name)
		}
	}
}
