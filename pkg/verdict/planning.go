package verdict

import (
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/grounding"
	"github.com/sondehq/sonde/pkg/policy"
)

// verifyPlan is agent-planning.1: the run left non-empty closing prose, and
// that prose was its deliverable — a statement drafted on the ledger, or an
// explicit NO STATEMENT: line. A planning run is toolless and cites
// nothing, so the investigation rule would fail every plan; prose alone is
// not enough either, or a lecture would score answered. An operations plan
// is prose by decision and is exempt from the statement part.
func verifyPlan(h contracts.RunStarted, entries []contracts.Entry, cancelled bool) contracts.GoalVerdict {
	v := contracts.GoalVerdict{Rule: RulePlanning, Unmet: []string{}}
	if cancelled {
		v.Outcome = contracts.VerdictCancelled
		return v
	}
	prose, drafted, declined := false, false, false
	for _, e := range entries {
		switch e.Kind {
		case contracts.KindPlanStatementDrafted:
			drafted = true
		case contracts.KindClosingStatement:
			p, err := e.Decode()
			if err != nil {
				continue
			}
			text := p.(*contracts.ClosingStatement).Text
			if strings.TrimSpace(text) != "" {
				prose = true
				declined = declined || grounding.ReadDeliverable(text, h.Engine).Declined
			}
		}
	}
	switch {
	case !prose:
		v.Outcome = contracts.VerdictUnanswered
		v.Unmet = append(v.Unmet, UnmetNoPlan)
	case policy.Workflows[h.WorkflowType].PlanIsProse || drafted || declined:
		v.Outcome = contracts.VerdictAnswered
	default:
		v.Outcome = contracts.VerdictUnanswered
		v.Unmet = append(v.Unmet, UnmetNoStatement)
	}
	return v
}
