package verdict

import (
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/grounding"
	"github.com/sondehq/sonde/pkg/policy"
)

// UnmetPlanUnchecked: the guard could not be asked about the drafted
// statement (no executor answered), so nothing vouches that it only reads
// or that its names exist. Sonde hands over only what its guard read.
const UnmetPlanUnchecked = "plan-unchecked"

// verifyPlan is agent-planning.2: the run left non-empty closing prose, and
// its last answer was its deliverable — a statement drafted on the ledger
// that the guard reads as a read (or, for query-optimization, as one CREATE
// INDEX on plain columns) naming nothing the schema snapshot lacks, or an
// explicit NO STATEMENT: line. A planning run is toolless and cites
// nothing, so the investigation rule would fail every plan; prose alone is
// not enough either, or a lecture would score answered. An operations plan
// is prose by decision and is exempt from the statement part. When the
// model drafted twice (the one repair turn), the later draft is judged as
// it is.
func verifyPlan(h contracts.RunStarted, entries []contracts.Entry, cancelled bool) contracts.GoalVerdict {
	v := contracts.GoalVerdict{Rule: RulePlanning, Unmet: []string{}}
	if cancelled {
		v.Outcome = contracts.VerdictCancelled
		return v
	}
	prose, lastTurn, declinedLast := false, 0, false
	var draft *contracts.PlanStatementDrafted
	for _, e := range entries {
		switch e.Kind {
		case contracts.KindPlanStatementDrafted:
			if p, err := e.Decode(); err == nil {
				draft = p.(*contracts.PlanStatementDrafted)
			}
		case contracts.KindClosingStatement:
			p, err := e.Decode()
			if err != nil {
				continue
			}
			cs := p.(*contracts.ClosingStatement)
			if strings.TrimSpace(cs.Text) != "" {
				prose, lastTurn = true, cs.Turn
				declinedLast = grounding.ReadDeliverable(cs.Text, h.Engine).Declined
			}
		}
	}
	switch {
	case !prose:
		v.Outcome = contracts.VerdictUnanswered
		v.Unmet = append(v.Unmet, UnmetNoPlan)
	case policy.Workflows[h.WorkflowType].PlanIsProse:
		v.Outcome = contracts.VerdictAnswered
	case declinedLast && (draft == nil || draft.Turn < lastTurn):
		// The last answer declined: an honest NO STATEMENT: after a refused
		// draft is the run's answer.
		v.Outcome = contracts.VerdictAnswered
	case draft == nil:
		v.Outcome = contracts.VerdictUnanswered
		v.Unmet = append(v.Unmet, UnmetNoStatement)
	default:
		v.Unmet = append(v.Unmet, PlanFaults(h, *draft)...)
		v.Outcome = contracts.VerdictAnswered
		if len(v.Unmet) > 0 {
			v.Outcome = contracts.VerdictUnanswered
		}
	}
	return v
}

// PlanFaults are the shortfalls of one drafted statement, in a stable
// order: plan-refused when the guard refused it (a write, a writable CTE,
// SELECT … INTO, a denied function such as setval(), two statements,
// another dialect's syntax such as TOP outside SQL Server) — except a
// query optimisation's index recommendation, judged below; plan-unchecked
// when the guard could not be asked at all; unknown-names when the names
// it reads are missing from the run's inventory. An index recommendation
// (IndexRecommendation) is judged by its table and columns only. A check
// against no inventory (the run captured none) finds no names unknown: the
// model was told to draft from the objective alone, and the record says
// no-inventory. The run loop uses the same function to decide the repair
// turn, so what the model is told to repair is what the verdict judges.
func PlanFaults(h contracts.RunStarted, p contracts.PlanStatementDrafted) []string {
	var out []string
	switch {
	case IndexRecommendation(h, p):
	case p.Refusal != nil:
		out = append(out, UnmetPlanRefused)
	case !p.ReadOnly:
		out = append(out, UnmetPlanUnchecked)
	}
	if p.Identifiers.Status == contracts.IdentifiersChecked && len(p.Identifiers.UnknownRelations)+len(p.Identifiers.UnknownColumns) > 0 {
		out = append(out, UnmetUnknownNames)
	}
	return out
}

// IndexRecommendation reports whether p is a query optimisation's index
// recommendation: the workflow's deliverable may be an index the user
// reviews and applies, the guard read the draft as one statement that is
// not a SELECT (not_a_select: it reads drafts as reads), and
// grounding.ReadIndex reads it as one CREATE INDEX on plain columns. Any
// other refusal (two statements, unparsable in the dialect) stands.
func IndexRecommendation(h contracts.RunStarted, p contracts.PlanStatementDrafted) bool {
	if !policy.Workflows[h.WorkflowType].PlanMayIndex || p.Refusal == nil || p.Refusal.Code != contracts.RefuseNotASelect {
		return false
	}
	_, ok := grounding.ReadIndex(p.SQL, h.Engine)
	return ok
}
