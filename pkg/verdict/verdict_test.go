package verdict

import (
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
)

func entry(t *testing.T, kind contracts.EventKind, p any) contracts.Entry {
	t.Helper()
	e, err := contracts.NewEntry("r", kind, time.Unix(0, 0), p)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func completed(t *testing.T, cid string, rows int) contracts.Entry {
	return entry(t, contracts.KindToolCompleted, contracts.ToolCompleted{StepID: cid, Outcome: contracts.OutcomeOK,
		Artifact: &contracts.ArtifactSummary{CorrelationID: cid, Rows: rows}})
}

func report(t *testing.T, refs ...contracts.EvidenceRef) contracts.Entry {
	return entry(t, contracts.KindReportComposed, contracts.ReportComposed{Claims: []contracts.Claim{{Text: "c", Evidence: refs}}})
}

func art(cid string) contracts.EvidenceRef {
	return contracts.EvidenceRef{Source: contracts.EvidenceArtifact, CorrelationID: cid}
}

func TestVerify(t *testing.T) {
	cases := []struct {
		name      string
		entries   []contracts.Entry
		cancelled bool
		outcome   contracts.VerdictOutcome
		unmet     []string
	}{
		{"no report", []contracts.Entry{completed(t, "a", 3)}, false, contracts.VerdictUnanswered, []string{UnmetNoReport}},
		{"cited rows", []contracts.Entry{completed(t, "a", 3), report(t, art("a"))}, false, contracts.VerdictAnswered, nil},
		{"only empty results", []contracts.Entry{completed(t, "a", 0), completed(t, "b", 0), report(t, art("a"), art("b"))}, false,
			contracts.VerdictUnanswered, []string{UnmetEmptyEvidence}},
		{"one empty one not", []contracts.Entry{completed(t, "a", 0), completed(t, "b", 2), report(t, art("a"), art("b"))}, false,
			contracts.VerdictAnswered, nil},
		{"snapshot is never empty", []contracts.Entry{completed(t, "a", 0),
			entry(t, contracts.KindContextCaptured, contracts.ContextCaptured{Fingerprint: "f"}),
			report(t, art("a"), contracts.EvidenceRef{Source: contracts.EvidenceContextSnapshot, Fingerprint: "f"})}, false,
			contracts.VerdictAnswered, nil},
		{"unresolvable citation skipped, not assumed empty", []contracts.Entry{completed(t, "a", 0), report(t, art("a"), art("ghost"))}, false,
			contracts.VerdictUnanswered, []string{UnmetEmptyEvidence}},
		// A report whose citations all fail to resolve (a ledger from another
		// version, a forged entry) rests on nothing the verdict can weigh: it
		// is not judged empty (the cited > 0 arm), and unresolvable citations
		// are not counted as empty ones.
		{"only unresolvable citations are not empty evidence", []contracts.Entry{completed(t, "a", 0), report(t, art("ghost"), art("phantom"))}, false,
			contracts.VerdictAnswered, nil},
		{"a snapshot the run never captured does not count", []contracts.Entry{completed(t, "a", 0),
			report(t, art("a"), contracts.EvidenceRef{Source: contracts.EvidenceContextSnapshot, Fingerprint: "f"})}, false,
			contracts.VerdictUnanswered, []string{UnmetEmptyEvidence}},
		{"cancelled", []contracts.Entry{completed(t, "a", 3)}, true, contracts.VerdictCancelled, nil},
	}
	for _, c := range cases {
		v := Verify(c.entries, c.cancelled)
		if v.Outcome != c.outcome || v.Rule != RuleInvestigation || len(v.Unmet) != len(c.unmet) {
			t.Errorf("%s: %+v, want %s %v", c.name, v, c.outcome, c.unmet)
			continue
		}
		for i := range c.unmet {
			if v.Unmet[i] != c.unmet[i] {
				t.Errorf("%s: unmet %v, want %v", c.name, v.Unmet, c.unmet)
			}
		}
		if v.Unmet == nil {
			t.Errorf("%s: unmet must be an empty list, not null", c.name)
		}
	}
}

// TestEveryWorkflowRowNamesAKnownRule: a row whose verdict rule this package
// does not judge by would be judged by the wrong one.
func TestEveryWorkflowRowNamesAKnownRule(t *testing.T) {
	for w, r := range policy.Workflows {
		if !Known(r.PlanRule) || r.AgentRule != "" && !Known(r.AgentRule) {
			t.Errorf("workflow %s names rules %q / %q", w, r.AgentRule, r.PlanRule)
		}
	}
}
