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

// Produced is the evidence a run produced: the row count of each result it
// read, by correlation id, and the fingerprint of its context snapshot.
type Produced struct {
	Rows        map[string]int
	Fingerprint string
}

// ProducedBy folds what entries produced.
func ProducedBy(entries []contracts.Entry) Produced {
	p := Produced{Rows: map[string]int{}}
	for _, e := range entries {
		v, err := e.Decode()
		if err != nil {
			continue
		}
		switch v := v.(type) {
		case *contracts.ToolCompleted:
			if v.Outcome == contracts.OutcomeOK && v.Artifact != nil {
				p.Rows[v.Artifact.CorrelationID] = v.Artifact.Rows
			}
		case *contracts.ContextCaptured:
			p.Fingerprint = v.Fingerprint
		}
	}
	return p
}

// Resolves reports whether ref cites something the run produced.
func (p Produced) Resolves(ref contracts.EvidenceRef) bool {
	switch ref.Source {
	case contracts.EvidenceArtifact:
		_, ok := p.Rows[ref.CorrelationID]
		return ok
	case contracts.EvidenceContextSnapshot:
		return p.Fingerprint != "" && ref.Fingerprint == p.Fingerprint
	}
	return false
}

// Verify judges a run from its entries. A cancelled run is judged cancelled:
// a stop is not a defect of the run.
func Verify(entries []contracts.Entry, cancelled bool) contracts.GoalVerdict {
	v := contracts.GoalVerdict{Rule: RuleInvestigation, Unmet: []string{}}
	if cancelled {
		v.Outcome = contracts.VerdictCancelled
		return v
	}
	var claims []contracts.Claim
	for _, e := range entries {
		if e.Kind != contracts.KindReportComposed {
			continue
		}
		if p, err := e.Decode(); err == nil {
			claims = p.(*contracts.ReportComposed).Claims
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
	produced := ProducedBy(entries)
	cited, empty := 0, 0
	for _, c := range claims {
		for _, ref := range c.Evidence {
			if !produced.Resolves(ref) {
				continue
			}
			cited++
			if ref.Source == contracts.EvidenceArtifact && produced.Rows[ref.CorrelationID] == 0 {
				empty++
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
