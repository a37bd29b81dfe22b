package orchestrator

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/sondehq/sonde/contracts"
	enginespec "github.com/sondehq/sonde/pkg/engine"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/policy"
)

// What a refusal's fix is made of: the run's own ids where an example id is
// given (never a made-up one), the engine's dialect where a statement could
// not be read, and the notes of a call whose tool name was read leniently.

// exampleIDs lists the ids of up to n results this run produced with one of
// tools (with any tool when none is named), the latest last: the ids a
// refusal's fix shows, so that an example is one the model can use.
func (d *drive) exampleIDs(n int, tools ...string) []string {
	var ids []string
	for _, st := range d.record().Steps {
		if st.Status != contracts.StepCompleted || st.Artifact == nil || st.Artifact.CorrelationID == "" {
			continue
		}
		if len(tools) > 0 && !slices.Contains(tools, st.Tool) {
			continue
		}
		ids = append(ids, st.Artifact.CorrelationID)
	}
	if len(ids) > n {
		ids = ids[len(ids)-n:]
	}
	return ids
}

// exampleID is the latest id exampleIDs would give, or placeholder when
// the run has produced no such result.
func (d *drive) exampleID(placeholder string, tools ...string) string {
	if ids := d.exampleIDs(1, tools...); len(ids) == 1 {
		return ids[0]
	}
	return placeholder
}

// dialectHint is the engine's dialect in one sentence, said with a
// statement the engine could not read (a syntax error, an unparsable
// refusal): most often another dialect's habit.
func dialectHint(e contracts.Engine) string {
	s, ok := enginespec.Lookup(e)
	if !ok {
		return ""
	}
	return fmt.Sprintf("\n%s syntax: %s.", s.Dialect, strings.Join(s.DialectHints, "; "))
}

// unreadable reports a guard refusal that says the engine could not read
// the statement at all.
func unreadable(code contracts.Code) bool {
	return code == contracts.RefuseUnparsable || code == contracts.RefuseEngineParse
}

// note keeps a note of how the call id was read (from the model's text, its
// tool named in another case or with a prefix) for the first entry that
// records the call.
func (d *drive) note(id, note string) {
	if d.callNotes == nil {
		d.callNotes = map[string][]string{}
	}
	d.callNotes[id] = append(d.callNotes[id], note)
}

// noteCall adds the notes kept of a call (note, readTextCalls) to the first
// entry that records it: its invocation, report, comparison,
// recommendation, answer or refusal. The drive's append calls it on every
// payload.
func (d *drive) noteCall(payload any) any {
	if len(d.callNotes) == 0 {
		return payload
	}
	take := func(id string, have []string) []string {
		n, ok := d.callNotes[id]
		if !ok {
			return have
		}
		delete(d.callNotes, id)
		return append(slices.Clone(n), have...)
	}
	switch p := payload.(type) {
	case contracts.ToolInvoked:
		p.Normalised = take(p.CallID, p.Normalised)
		return p
	case contracts.ToolRefused:
		p.Normalised = take(p.CallID, p.Normalised)
		return p
	case contracts.ReportComposed:
		p.Normalised = take(p.CallID, p.Normalised)
		return p
	case contracts.PlanComparison:
		p.Normalised = take(p.CallID, p.Normalised)
		return p
	case contracts.Recommendation:
		p.Normalised = take(p.CallID, p.Normalised)
		return p
	case contracts.AnswerComposed:
		p.Normalised = take(p.CallID, p.Normalised)
		return p
	}
	return payload
}

// artifactRef is the citation of id in the one shape the rules give.
func artifactRef(id string) string {
	b, _ := json.Marshal(contracts.EvidenceRef{Source: contracts.EvidenceArtifact, CorrelationID: id})
	return string(b)
}

// compareExample is compare_plans' fix, naming the run's own plans: the
// two latest, or what the run still has to read to have two.
func (d *drive) compareExample() string {
	ids := d.exampleIDs(2, policy.ToolInspectPlan)
	switch len(ids) {
	case 2:
		return fmt.Sprintf(`send {"before":%s,"after":%s}: the ids of two inspect_plan results of this run`, fence.Quote(ids[0]), fence.Quote(ids[1]))
	case 1:
		return fmt.Sprintf(`send {"before":%s,"after":"<the id of a second plan>"}: this run has read one plan (%s); call inspect_plan for the other first`, fence.Quote(ids[0]), ids[0])
	}
	return `send {"before":"<id>","after":"<id>"}: the ids of two inspect_plan results; this run has read no plan yet, so call inspect_plan first`
}
