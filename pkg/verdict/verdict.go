// Package verdict decides whether a run answered: a pure fold over its ledger,
// one versioned rule per mode and workflow.
package verdict

import (
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
)

// Rule ids.
const (
	RuleInvestigation = "agent-investigation.1"
	RulePlanning      = "agent-planning.1"
)

// Shortfall codes.
const (
	UnmetNoReport      = "no-report"
	UnmetEmptyEvidence = "empty-evidence"
	// UnmetNoPlan: a planning run left no closing prose at all.
	UnmetNoPlan = "no-plan"
	// UnmetNoStatement: its prose held neither a drafted statement nor a
	// NO STATEMENT: line.
	UnmetNoStatement = "no-statement"
	// UnmetFigureUnverified: a claim states a figure found in none of the
	// results it cites, nor derived from them (GoalVerdict.Claims says which).
	UnmetFigureUnverified = "figure-unverified"
	// UnmetSchemaOnly: the report's claims about data rest only on the
	// schema snapshot, which shows structure, not data.
	UnmetSchemaOnly = "schema-only"
	// UnmetDataUnread: an honest report that the data could not be read
	// (the run's reads failed or were refused): the objective is unanswered.
	UnmetDataUnread = "data-unread"
	// UnmetUnseenEvidence: a claim cites a result the model had not been
	// shown when it wrote the claim (produced in the same turn).
	UnmetUnseenEvidence = "unseen-evidence"
	// UnmetQuestion: the model asked the user a question instead of
	// answering (StopQuestion).
	UnmetQuestion = "question-asked"
	// UnmetPlanRefused: a planning run's drafted statement is one the guard
	// refuses (a write, two statements, another dialect).
	UnmetPlanRefused = "plan-refused"
	// UnmetUnknownNames: it names tables or columns the schema snapshot
	// does not hold.
	UnmetUnknownNames = "unknown-names"
)

// Produced is the evidence a run produced: the row count of each result it
// read, by correlation id, and its context snapshot (cited by its artifact
// id, or, on ledgers recorded before that, by its fingerprint).
type Produced struct {
	Rows map[string]int
	// Tools names the tool that produced each result, by correlation id.
	Tools       map[string]string
	Fingerprint string
	// Snapshot is the schema snapshot's citable id; a snapshot is evidence
	// about structure and never empty evidence.
	Snapshot string
}

// ProducedBy folds what entries produced.
func ProducedBy(entries []contracts.Entry) Produced {
	p := Produced{Rows: map[string]int{}, Tools: map[string]string{}}
	for _, e := range entries {
		v, err := e.Decode()
		if err != nil {
			continue
		}
		switch v := v.(type) {
		case *contracts.ToolCompleted:
			if v.Outcome == contracts.OutcomeOK && v.Artifact != nil {
				p.Rows[v.Artifact.CorrelationID] = v.Artifact.Rows
				p.Tools[v.Artifact.CorrelationID] = v.Tool
			}
		case *contracts.ContextCaptured:
			p.Fingerprint = v.Fingerprint
			p.Snapshot = v.CorrelationID
		}
	}
	return p
}

// Resolves reports whether ref cites something the run produced.
func (p Produced) Resolves(ref contracts.EvidenceRef) bool {
	switch ref.Source {
	case contracts.EvidenceArtifact:
		if p.Snapshot != "" && ref.CorrelationID == p.Snapshot {
			return true
		}
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
	var h contracts.RunStarted
	if len(entries) > 0 && entries[0].Kind == contracts.KindRunStarted {
		if p, err := entries[0].Decode(); err == nil {
			h = *p.(*contracts.RunStarted)
		}
	}
	if h.Mode == contracts.ModePlanning {
		return verifyPlan(h, entries, cancelled)
	}
	// The rule is the one the workflow's row names; a header from before
	// workflows (none recorded) is an investigation.
	if judge, ok := agentRules[policy.Workflows[h.WorkflowType].AgentRule]; ok {
		return judge(entries, cancelled)
	}
	return verifyInvestigation(entries, cancelled)
}

// agentRules are the agent-mode rules by id; every workflow row's AgentRule
// names one (a test holds the table to that).
var agentRules = map[string]func([]contracts.Entry, bool) contracts.GoalVerdict{
	RuleInvestigation:      verifyInvestigation,
	RuleQueryOptimization:  verifyQueryOptimization,
	RuleDatabaseAssessment: verifyDatabaseAssessment,
	RuleOperations:         verifyOperations,
	RuleDataAnalysis:       verifyDataAnalysis,
}

// Known reports whether id names a rule this package judges by.
func Known(id string) bool {
	_, ok := agentRules[id]
	return ok || id == RulePlanning
}

// verifyInvestigation is agent-investigation.1: the run composed at least
// one claim, and its claims do not rest entirely on empty results.
func verifyInvestigation(entries []contracts.Entry, cancelled bool) contracts.GoalVerdict {
	return baseline(RuleInvestigation, entries, cancelled, nil)
}

// baseline judges the investigation rule under the id rule. exempt, when
// set, names results whose row count measures nothing (a plan): citing one
// is neither empty nor full evidence.
func baseline(rule string, entries []contracts.Entry, cancelled bool, exempt func(corr string) bool) contracts.GoalVerdict {
	v := contracts.GoalVerdict{Rule: rule, Unmet: []string{}}
	if cancelled {
		v.Outcome = contracts.VerdictCancelled
		return v
	}
	claims := reportOf(entries)
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
			if ref.Source == contracts.EvidenceArtifact && exempt != nil && exempt(ref.CorrelationID) {
				continue
			}
			cited++
			if ref.Source == contracts.EvidenceArtifact && ref.CorrelationID != produced.Snapshot && produced.Rows[ref.CorrelationID] == 0 {
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

// reportOf returns the claims of the run's report, if it composed one.
func reportOf(entries []contracts.Entry) []contracts.Claim {
	var claims []contracts.Claim
	for _, e := range entries {
		if e.Kind != contracts.KindReportComposed {
			continue
		}
		if p, err := e.Decode(); err == nil {
			claims = p.(*contracts.ReportComposed).Claims
		}
	}
	return claims
}
