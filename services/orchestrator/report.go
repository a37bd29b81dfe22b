package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
	"github.com/sondehq/sonde/pkg/verdict"
)

// The report: compose_report's arguments read, every citation checked
// against what the run produced and showed the model, the verdict the
// report would earn computed before it is recorded, and the run ended.

// The report's own refusal codes.
const (
	// refuseUnseen: a citation names a result produced in the same turn as
	// the citing call; the model has not seen its rows.
	refuseUnseen = contracts.RefuseEvidenceUnseen
	// refuseIncomplete: the report would end the run unanswered, and the
	// model has not yet been told of that shortfall.
	refuseIncomplete = contracts.RefuseReportIncomplete
)

// composeReport verifies every citation against this run's own ledger —
// produced, and shown to the model before the citing turn — computes the
// verdict the report would earn, and ends the run with the report; or
// refuses the claims it cannot resolve, the citations the model had not
// seen, or, once per shortfall, a report that would end unanswered.
func (d *drive) composeReport(ctx context.Context, tc contracts.ToolCall, a reportArgs, notes []string) (bool, error) {
	produced := verdict.ProducedBy(d.entries)
	var problems []string
	if len(a.Claims) == 0 {
		problems = append(problems, "the report has no claims")
	}
	for i, c := range a.Claims {
		if strings.TrimSpace(c.Text) == "" {
			problems = append(problems, fmt.Sprintf("claim %d has no text", i+1))
		}
		if len(c.Evidence) == 0 {
			problems = append(problems, fmt.Sprintf("claim %d cites no evidence", i+1))
		}
		for _, ref := range c.Evidence {
			if !produced.Resolves(ref) {
				b, _ := json.Marshal(ref)
				problems = append(problems, fmt.Sprintf("claim %d cites %s, which this run did not produce", i+1, b))
			}
		}
	}
	if len(problems) > 0 {
		_, list := d.citableAt(tc.Turn)
		return false, d.refuse(ctx, tc, "", refuseUnresolved, strings.Join(problems, "; "), citationRule+" "+list)
	}
	var refs []contracts.EvidenceRef
	for _, c := range a.Claims {
		refs = append(refs, c.Evidence...)
	}
	// The two refusals below give the model a turn to mend its report; on
	// the run's last turn there is none, and a refused report would be
	// lost, so it is recorded and judged as it stands.
	mendable := tc.Turn < d.maxTurns() && d.remaining() > 0
	if unseen := d.unseen(tc.Turn, refs); len(unseen) > 0 && mendable {
		return false, d.refuseUnseen(ctx, tc, unseen, "cite only results you have seen; send the report in a later turn than the reads it rests on")
	}
	report := contracts.ReportComposed{ToolCall: tc, Claims: a.Claims, Normalised: notes}
	if v := prospective(d.entries, d.runID, report); v.Outcome == contracts.VerdictUnanswered && mendable {
		told, all := d.toldShortfalls()
		if !all && slices.ContainsFunc(v.Unmet, func(code string) bool { return !told[code] }) {
			reason, fix := d.shortfalls(v, a.Claims)
			return false, d.refuse(ctx, tc, "", refuseIncomplete, reason, fix)
		}
	}
	if err := d.append(ctx, contracts.KindReportComposed, report); err != nil {
		return false, err
	}
	return true, d.finish(ctx, contracts.StatusSucceeded, contracts.StopReportComposed, "", "", true)
}

// prospective is the verdict entries would earn with report recorded next.
func prospective(entries []contracts.Entry, runID string, report contracts.ReportComposed) contracts.GoalVerdict {
	data, _ := json.Marshal(report)
	e := contracts.Entry{V: contracts.Version, Kind: contracts.KindReportComposed, RunID: runID, Seq: uint64(len(entries) + 1), Data: data}
	return verdict.Verify(append(slices.Clip(entries), e), false)
}

// toldShortfalls lists the shortfall codes a report_incomplete refusal of
// this run already named: the verdict each refused report would have
// earned, recomputed from the ledger as it stood then, so a resumed drive
// knows what the model was told (text that was not JSON is kept as a JSON
// string, which the decoder reads as double-encoded). all reports a refused
// report that can no longer be read (a later release reading it otherwise):
// it may have named anything, and a report is never refused twice for what
// it may already have been told.
func (d *drive) toldShortfalls() (told map[string]bool, all bool) {
	told = map[string]bool{}
	for i, e := range d.entries {
		if e.Kind != contracts.KindToolRefused {
			continue
		}
		p, err := e.Decode()
		if err != nil {
			continue
		}
		r := p.(*contracts.ToolRefused)
		if r.Code != refuseIncomplete {
			continue
		}
		before := d.entries[:i]
		a, _, err := decodeReport(string(r.Arguments), producedIDsIn(before))
		if err != nil {
			return told, true
		}
		v := prospective(before, d.runID, contracts.ReportComposed{ToolCall: r.ToolCall, Claims: a.Claims})
		for _, code := range v.Unmet {
			told[code] = true
		}
	}
	return told, false
}

// unseenRef is a citation of a result the model had not been shown.
type unseenRef struct {
	id, tool string
}

// unseen lists the citations among refs, made on turn, of results produced
// on that same turn: the model wrote them before it could read the rows.
// The schema snapshot, captured before turn 1, is always shown; a citation
// that does not resolve is not this check's to report.
func (d *drive) unseen(turn int, refs []contracts.EvidenceRef) []unseenRef {
	produced := verdict.ProducedBy(d.entries)
	var out []unseenRef
	for _, ref := range refs {
		if !produced.Resolves(ref) || produced.Seen(ref, turn) || slices.ContainsFunc(out, func(u unseenRef) bool { return u.id == ref.CorrelationID }) {
			continue
		}
		out = append(out, unseenRef{id: ref.CorrelationID, tool: produced.Tools[ref.CorrelationID]})
	}
	return out
}

// refuseUnseen refuses a call citing results the model had not seen, saying
// for each why, and listing what is citable now and what becomes so.
func (d *drive) refuseUnseen(ctx context.Context, tc contracts.ToolCall, unseen []unseenRef, fix string) error {
	var why []string
	for _, u := range unseen {
		why = append(why, fmt.Sprintf("%s was %s in this same turn: you have not seen its rows yet; it becomes citable next turn", u.id, producedVerb(u.tool)))
	}
	_, list := d.citableAt(tc.Turn)
	return d.refuse(ctx, tc, "", refuseUnseen, strings.Join(why, "; "), fix+". "+list)
}

// producedVerb says how a tool produced its result, for a sentence.
func producedVerb(tool string) string {
	switch tool {
	case policy.ToolRunReadQuery:
		return "read"
	case "":
		return "produced"
	}
	return "produced by " + tool
}

// producedIDs lists every result id this run produced, shown or not, and
// its snapshot's: what lenient decoding may resolve a citation to (whether
// the model had seen it is checked after).
func (d *drive) producedIDs() []string { return producedIDsIn(d.entries) }

func producedIDsIn(entries []contracts.Entry) []string {
	p := verdict.ProducedBy(entries)
	ids := make([]string, 0, len(p.Rows)+1)
	for id := range p.Rows {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if p.Snapshot != "" {
		ids = append(ids, p.Snapshot)
	}
	return ids
}

// citable lists what the model may cite on the turn it takes next — every
// result produced so far, this turn's included, once they are shown — for
// notices written between turns. A call being handled uses citableAt with
// its own turn.
func (d *drive) citable() ([]string, string) {
	return d.citableAt(d.record().Spent.Turns + 1)
}

// citableAt lists what a call on turn may cite — its ids, and a sentence
// saying what each holds — for lenient decoding and a refused citation: a
// model that miscopied an id sees the right ones rather than repeating the
// same mistake. Only results shown before turn are citable; the sentence
// names those produced on turn itself as citable from the next.
func (d *drive) citableAt(turn int) ([]string, string) {
	rec := d.record()
	produced := verdict.ProducedBy(d.entries)
	var ids, said, pending []string
	for _, st := range rec.Steps {
		if st.Status != contracts.StepCompleted || st.Artifact == nil {
			continue
		}
		id := st.Artifact.CorrelationID
		what := fmt.Sprintf("%s (%s, %s)", id, st.Tool, plural(st.Artifact.Rows, "row"))
		if !produced.Seen(contracts.EvidenceRef{Source: contracts.EvidenceArtifact, CorrelationID: id}, turn) {
			pending = append(pending, what)
			continue
		}
		ids = append(ids, id)
		said = append(said, what)
	}
	for _, e := range d.entries {
		if e.Kind != contracts.KindContextCaptured {
			continue
		}
		if p, err := e.Decode(); err == nil && p.(*contracts.ContextCaptured).CorrelationID != "" {
			id := p.(*contracts.ContextCaptured).CorrelationID
			ids = append(ids, id)
			said = append(said, id+" (the schema snapshot: structure only)")
		}
	}
	var out string
	switch {
	case len(ids) == 0:
		out = "This run has produced nothing citable yet: read something first."
	default:
		out = "Citable in this run: " + strings.Join(said, ", ") + "."
	}
	if len(pending) > 0 {
		out += " Produced in this turn, citable from your next turn once you have read them: " + strings.Join(pending, ", ") + "."
	}
	return ids, out
}
