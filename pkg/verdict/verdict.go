// Package verdict decides whether a run answered: a pure fold over its ledger,
// one versioned rule per mode and workflow.
package verdict

import (
	"github.com/sondehq/sonde/contracts"
)

// Rule ids.
const (
	RuleInvestigation = "agent-investigation.1"
)

// Shortfall codes.
const (
	UnmetNoReport      = "no-report"
	UnmetEmptyEvidence = "empty-evidence"
)

// Verify judges a run from its entries. A cancelled run is judged cancelled:
// a stop is not a defect of the run.
func Verify(entries []contracts.Entry, cancelled bool) contracts.GoalVerdict {
	v := contracts.GoalVerdict{Rule: RuleInvestigation, Unmet: []string{}}
	if cancelled {
		v.Outcome = contracts.VerdictCancelled
		return v
	}
	rows := map[string]int{} // correlation id -> rows of a result this run read
	var claims []contracts.Claim
	for _, e := range entries {
		p, err := e.Decode()
		if err != nil {
			continue
		}
		switch p := p.(type) {
		case *contracts.ToolCompleted:
			if p.Outcome == contracts.OutcomeOK && p.Artifact != nil {
				rows[p.Artifact.CorrelationID] = p.Artifact.Rows
			}
		case *contracts.ReportComposed:
			claims = p.Claims
		}
	}
	if len(claims) == 0 {
		v.Outcome = contracts.VerdictUnanswered
		v.Unmet = append(v.Unmet, UnmetNoReport)
		return v
	}
	// The claims must not rest entirely on empty results. A citation the
	// ledger cannot resolve is skipped rather than assumed empty; the
	// context snapshot is never empty evidence.
	cited, empty := 0, 0
	for _, c := range claims {
		for _, ref := range c.Evidence {
			switch ref.Source {
			case contracts.EvidenceArtifact:
				n, ok := rows[ref.CorrelationID]
				if !ok {
					continue
				}
				cited++
				if n == 0 {
					empty++
				}
			case contracts.EvidenceContextSnapshot:
				cited++
			}
		}
	}
	if cited > 0 && cited == empty {
		v.Outcome = contracts.VerdictUnanswered
		v.Unmet = append(v.Unmet, UnmetEmptyEvidence)
		return v
	}
	v.Outcome = contracts.VerdictAnswered
	return v
}
