package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/artifacts"
	"github.com/sondehq/sonde/pkg/chart"
	"github.com/sondehq/sonde/pkg/handover"
	"github.com/sondehq/sonde/pkg/policy"
	"github.com/sondehq/sonde/pkg/verdict"
)

// The specialist workflows' tools. Two reach the database through a step
// like any read (profile_table, inspect_operations); three reach none and
// record what the model decided, joined to the run's own ledger by the
// server (compare_plans, recommend_change, present_answer).

// held reports whether the run's result corr is still in the artifact
// store: a comparison and an answer are checked against rows, and rows
// that are gone are said to be gone.
func (d *drive) held(ctx context.Context, corr string) bool {
	_, err := d.rows(ctx, corr)
	return err == nil
}

// rows reads the run's stored result corr.
func (d *drive) rows(ctx context.Context, corr string) (contracts.Artifact, error) {
	if d.s.artifacts == nil {
		return contracts.Artifact{}, artifacts.ErrNotFound
	}
	return d.s.artifacts.Get(ctx, d.runID, corr)
}

// callPresentAnswer records which result is the answer and how to show it.
// A second answer is refused before the arguments are read: an argument
// refusal would invite a corrected second call.
func (d *drive) callPresentAnswer(ctx context.Context, _ contracts.ExecOp, tc contracts.ToolCall, raw string) (bool, error) {
	if rec := d.record(); rec.Answer != nil {
		return false, d.refuse(ctx, tc, "", contracts.RefuseAnswerAlreadyRecorded,
			fmt.Sprintf("this run presented its answer already (%s); a run answers once", rec.Answer.CorrelationID),
			"call compose_report, citing the presented result in at least one claim")
	}
	a, notes, err := decodeAnswer(raw, d.producedIDs())
	if err != nil {
		return false, d.refuse(ctx, tc, "", refuseInvalidArguments, err.Error(),
			`send {"artifact":`+quote(d.exampleID("<the id of the run_read_query result that answers>", policy.ToolRunReadQuery))+
				`,"presentation":{"kind":"table","spec":null}} or a chart {"kind":"chart","spec":{"type":"bar","x":"…","y":["…"],"caption":"…"}}`)
	}
	st, ok := d.stepOf(a.Artifact)
	snapshot := d.snapshotID()
	switch {
	case a.Artifact == snapshot && snapshot != "":
		return false, d.refuse(ctx, tc, "", contracts.RefuseAnswerStatementUnknown,
			"the schema snapshot is a catalog read the server wrote: no statement of yours produced it, so there is nothing to hand over",
			"present the result of a run_read_query that answers the question")
	case !ok:
		_, list := d.citableAt(tc.Turn)
		return false, d.refuse(ctx, tc, "", contracts.RefuseAnswerArtifactUnknown,
			fmt.Sprintf("%s names no result this run produced", quote(a.Artifact)), list)
	case st.Tool == policy.ToolInspectSchema:
		return false, d.refuse(ctx, tc, "", contracts.RefuseAnswerStatementUnknown,
			fmt.Sprintf("%s is a catalog read the server wrote: no statement of yours produced it", a.Artifact),
			"present the result of a run_read_query that answers the question")
	case st.Tool != policy.ToolRunReadQuery:
		return false, d.refuse(ctx, tc, "", contracts.RefuseAnswerNotADataRead,
			fmt.Sprintf("%s is a %s result, not a reading of the data; it may still be cited as evidence", a.Artifact, st.Tool),
			"present the result of a run_read_query that answers the question")
	}
	// The answer is a result the model read and judged to be the answer:
	// one produced in this same turn it has not seen.
	if unseen := d.unseen(tc.Turn, []contracts.EvidenceRef{{Source: contracts.EvidenceArtifact, CorrelationID: a.Artifact}}); len(unseen) > 0 {
		return false, d.refuseUnseen(ctx, tc, unseen, "present the answer in a later turn than the read, once you have seen its rows")
	}
	read, _, _ := decodeRead(string(st.Arguments))
	if strings.TrimSpace(read.SQL) == "" {
		return false, d.refuse(ctx, tc, "", contracts.RefuseAnswerStatementUnknown,
			fmt.Sprintf("no statement of this run can be read for %s", a.Artifact), "present a result whose statement the run recorded")
	}
	art, err := d.rows(ctx, a.Artifact)
	if err != nil {
		return false, d.refuse(ctx, tc, "", contracts.RefuseAnswerResultReleased,
			fmt.Sprintf("the rows of %s are no longer held, so the presentation cannot be checked against them", a.Artifact),
			"run the statement again and present the new result")
	}
	// The one chart decision (pkg/chart), recorded with the answer: clients
	// draw what it says.
	var decided *contracts.ChartDecision
	if a.Presentation.Kind == contracts.PresentChart {
		dec, err := chart.Decide(*a.Presentation.Chart, art)
		var p *contracts.Problem
		switch {
		case errors.As(err, &p):
			return false, d.refuse(ctx, tc, "", p.Code, p.Message, p.Fix)
		case err != nil:
			return false, err
		}
		decided = &dec
	}
	ans := contracts.AnswerComposed{ToolCall: tc, CorrelationID: a.Artifact, SQL: read.SQL, Fingerprint: st.Fingerprint,
		Presentation: a.Presentation, Chart: decided, Handover: contracts.HandoverNone, Normalised: notes}
	if d.header.AutoExecute {
		ans.Handover, ans.HandoverWarning = handover.Gate(d.gateEvidence(st))
	}
	ref, _ := json.Marshal(contracts.EvidenceRef{Source: contracts.EvidenceArtifact, CorrelationID: a.Artifact})
	shown := "as a table"
	if c := a.Presentation.Chart; c != nil {
		shown = fmt.Sprintf("as a %s chart of %s against %s", c.Type, quoteAll(c.Y), quote(c.X))
	}
	ans.Content = fmt.Sprintf("Answer recorded: %s %s. A chart is not a claim: call compose_report with at least one claim citing %s.", a.Artifact, shown, ref)
	switch ans.Handover {
	case contracts.HandoverAutoExecuted:
		ans.Content += " The statement is handed to the user's editor and run there."
	case contracts.HandoverApplied:
		ans.Content += " " + ans.HandoverWarning
	}
	ans.Content += d.status(tc.Turn, false, false)
	return false, d.append(ctx, contracts.KindAnswerComposed, ans)
}

// gateEvidence is what the ledger says about the answer's statement for the
// auto-execute gate: that the run executed it (joined on the guard's
// canonical fingerprint), the plan this run read of the same statement (as
// the database is, not with a hypothetical index), and its measured time.
func (d *drive) gateEvidence(answer contracts.Step) handover.Evidence {
	e := handover.Evidence{Engine: d.header.Engine, ElapsedMs: answer.DurationMs}
	for _, st := range d.record().Steps {
		if st.Status != contracts.StepCompleted || st.Fingerprint == "" || st.Fingerprint != answer.Fingerprint {
			continue
		}
		switch st.Tool {
		case policy.ToolRunReadQuery:
			e.Executed = true
		case policy.ToolInspectPlan:
			if st.Plan != nil && st.Plan.HypotheticalIndex == "" {
				e.Plan = st.Plan
			}
		}
	}
	return e
}

// stepOf finds the completed step that produced the result corr.
func (d *drive) stepOf(corr string) (contracts.Step, bool) {
	for _, st := range d.record().Steps {
		if st.Status == contracts.StepCompleted && st.Artifact != nil && st.Artifact.CorrelationID == corr {
			return st, true
		}
	}
	return contracts.Step{}, false
}

// snapshotID is the citable id of the run's schema snapshot, if it has one.
func (d *drive) snapshotID() string {
	return verdict.ProducedBy(d.entries).Snapshot
}

func quoteEach(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = quote(n)
	}
	return out
}

func quoteAll(names []string) string { return strings.Join(quoteEach(names), ", ") }
