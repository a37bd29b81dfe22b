package verdict

import (
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
)

// The specialist workflows' rule ids.
const (
	RuleQueryOptimization  = "agent-query-optimization.4"
	RuleDatabaseAssessment = "agent-database-assessment.2"
	RuleOperations         = "agent-operations.3"
	RuleDataAnalysis       = "agent-data-analysis.2"
)

// The specialist workflows' shortfall codes.
const (
	// UnmetNoPlanComparison: an optimization run compared no plans and
	// recommended no index.
	UnmetNoPlanComparison = "no-plan-comparison"
	// UnmetNoPlanEvidence: it recommended an index citing no plan it read.
	UnmetNoPlanEvidence = "no-plan-evidence"
	// UnmetNoTableProfile: an assessment profiled no table.
	UnmetNoTableProfile = "no-table-profile"
	// UnmetNoReading: an operations report cites no reading the run took.
	UnmetNoReading = "no-reading"
	// UnmetNoAnswer: an analysis presented no answer.
	UnmetNoAnswer = "no-answer"
	// UnmetAnswerUncited: its report cites nothing of the presented result.
	UnmetAnswerUncited = "answer-uncited"
)

// isPlan reports whether corr names an estimating plan the run read.
func (p Produced) isPlan(corr string) bool { return p.Tools[corr] == policy.ToolInspectPlan }

// verifyQueryOptimization is agent-query-optimization.4: the baseline with
// plans exempt from its emptiness clause (a plan's row count measures
// nothing), and evidence that the outcome rests on what the engine does: a
// plan comparison, an index recommendation citing a plan the run read, or
// the honest "no change needed" (the plan already uses an index): no
// recommendation at all, and a report citing a plan the run read. The
// baseline dominates: a run that never reported is told that.
func verifyQueryOptimization(entries []contracts.Entry, cancelled bool) contracts.GoalVerdict {
	produced := ProducedBy(entries)
	v := baseline(RuleQueryOptimization, entries, cancelled, produced.isPlan)
	if v.Outcome != contracts.VerdictAnswered {
		return v
	}
	compared, indexOnPlan, indexWithoutPlan, recommended := false, false, false, false
	for _, e := range entries {
		p, err := e.Decode()
		if err != nil {
			continue
		}
		switch p := p.(type) {
		case *contracts.PlanComparison:
			compared = true
		case *contracts.Recommendation:
			recommended = true
			if p.Kind != contracts.RecommendIndex {
				continue
			}
			cites := false
			for _, ref := range p.Evidence {
				cites = cites || ref.Source == contracts.EvidenceArtifact && produced.isPlan(ref.CorrelationID)
			}
			indexOnPlan = indexOnPlan || cites
			indexWithoutPlan = indexWithoutPlan || !cites
		}
	}
	switch {
	case compared || indexOnPlan:
	case indexWithoutPlan:
		v.Outcome, v.Unmet = contracts.VerdictUnanswered, append(v.Unmet, UnmetNoPlanEvidence)
	case !recommended && citesPlan(reportOf(entries), produced):
		// No change recommended, and the report rests on the plan read:
		// whether the plan needs no change is the report's judgement (on
		// DuckDB a scan may be the best plan); that it rests on the plan is
		// the rule's.
	default:
		v.Outcome, v.Unmet = contracts.VerdictUnanswered, append(v.Unmet, UnmetNoPlanComparison)
	}
	return v
}

// citesPlan reports whether a claim cites an estimating plan the run read.
func citesPlan(claims []contracts.Claim, produced Produced) bool {
	for _, c := range claims {
		for _, ref := range c.Evidence {
			if ref.Source == contracts.EvidenceArtifact && produced.isPlan(ref.CorrelationID) {
				return true
			}
		}
	}
	return false
}

// verifyDatabaseAssessment is agent-database-assessment.2: the baseline,
// and a table actually profiled — an assessment written from the schema
// alone describes the database's shape, not the state of its data.
func verifyDatabaseAssessment(entries []contracts.Entry, cancelled bool) contracts.GoalVerdict {
	v := baseline(RuleDatabaseAssessment, entries, cancelled, nil)
	if v.Outcome == contracts.VerdictAnswered && !hasKind(entries, contracts.KindTableProfiled) {
		v.Outcome, v.Unmet = contracts.VerdictUnanswered, append(v.Unmet, UnmetNoTableProfile)
	}
	return v
}

// verifyOperations is agent-operations.3: a composed report with at least
// one claim citing a result the run read (not only the schema snapshot).
// Not built on the baseline: an empty reading ("no session is blocked") is
// an answer, so there is no emptiness clause.
func verifyOperations(entries []contracts.Entry, cancelled bool) contracts.GoalVerdict {
	v := contracts.GoalVerdict{Rule: RuleOperations, Unmet: []string{}}
	if cancelled {
		v.Outcome = contracts.VerdictCancelled
		return v
	}
	claims := reportOf(entries)
	if len(claims) == 0 {
		v.Outcome, v.Unmet = contracts.VerdictUnanswered, append(v.Unmet, UnmetNoReport)
		return v
	}
	produced := ProducedBy(entries)
	for _, c := range claims {
		for _, ref := range c.Evidence {
			if ref.Source == contracts.EvidenceArtifact && ref.CorrelationID != produced.Snapshot && produced.Resolves(ref) {
				v.Outcome = contracts.VerdictAnswered
				return v
			}
		}
	}
	v.Outcome, v.Unmet = contracts.VerdictUnanswered, append(v.Unmet, UnmetNoReading)
	return v
}

// verifyDataAnalysis is agent-data-analysis.2: the baseline, an
// answer-composed entry (which result IS the answer), and at least one
// claim citing that same result, so the report is about what it presented.
func verifyDataAnalysis(entries []contracts.Entry, cancelled bool) contracts.GoalVerdict {
	v := baseline(RuleDataAnalysis, entries, cancelled, nil)
	if v.Outcome != contracts.VerdictAnswered {
		return v
	}
	answer := ""
	for _, e := range entries {
		if e.Kind != contracts.KindAnswerComposed {
			continue
		}
		if p, err := e.Decode(); err == nil {
			answer = p.(*contracts.AnswerComposed).CorrelationID
		}
	}
	if answer == "" {
		v.Outcome, v.Unmet = contracts.VerdictUnanswered, append(v.Unmet, UnmetNoAnswer)
		return v
	}
	for _, c := range reportOf(entries) {
		for _, ref := range c.Evidence {
			if ref.Source == contracts.EvidenceArtifact && ref.CorrelationID == answer {
				return v
			}
		}
	}
	v.Outcome, v.Unmet = contracts.VerdictUnanswered, append(v.Unmet, UnmetAnswerUncited)
	return v
}

// hasKind reports whether entries hold an entry of kind.
func hasKind(entries []contracts.Entry, kind contracts.EventKind) bool {
	for _, e := range entries {
		if e.Kind == kind {
			return true
		}
	}
	return false
}
