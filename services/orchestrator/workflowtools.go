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

type profileArgs struct {
	Table      string `json:"table"`
	Depth      string `json:"depth,omitempty"`
	FromColumn string `json:"fromColumn,omitempty"`
}

type operationsArgs struct {
	Kind   string `json:"kind"`
	Schema string `json:"schema,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

type compareArgs struct{ Before, After string }

type recommendArgs struct {
	Kind, Statement, Rationale string
	Evidence                   []contracts.EvidenceRef
}

type answerArgs struct {
	Artifact     string
	Presentation contracts.Presentation
}

// estimatesOnly is said with every comparison, by the server rather than
// left to the model.
const estimatesOnly = "Estimates only: these plans were described, not executed."

// callProfileTable asks the executor to profile one table.
func (d *drive) callProfileTable(ctx context.Context, op contracts.ExecOp, tc contracts.ToolCall, raw string) (bool, error) {
	a, notes, err := decodeProfile(raw)
	if err != nil {
		return false, d.refuse(ctx, tc, "", refuseInvalidArguments, err.Error(), `send {"table":"…","depth":"basic","fromColumn":null}`)
	}
	reply, err := d.statement(ctx, tc, op, a, notes, contracts.ExecRequest{
		Table: a.Table, Depth: contracts.ProfileDepth(a.Depth), FromColumn: a.FromColumn})
	if err != nil || reply == nil || reply.Profile == nil || reply.Artifact == nil {
		return false, err
	}
	return false, d.append(ctx, contracts.KindTableProfiled, contracts.TableProfiled{
		ToolCall: contracts.ToolCall{Turn: tc.Turn, CallID: tc.CallID, Tool: tc.Tool, Arguments: tc.Arguments},
		Table:    a.Table, Depth: string(reply.Profile.Depth), CorrelationID: reply.Artifact.CorrelationID,
		StepID: d.lastStepID(), Profile: reply.Profile,
	})
}

// lastStepID is the step id of the ledger's last tool-completed entry.
func (d *drive) lastStepID() string {
	if p, err := d.entries[len(d.entries)-1].Decode(); err == nil {
		if c, ok := p.(*contracts.ToolCompleted); ok {
			return c.StepID
		}
	}
	return ""
}

// callInspectOperations takes one curated reading: the model names a kind,
// never a statement.
func (d *drive) callInspectOperations(ctx context.Context, op contracts.ExecOp, tc contracts.ToolCall, raw string) (bool, error) {
	a, notes, err := decodeOperations(raw)
	if err != nil {
		return false, d.refuse(ctx, tc, "", refuseInvalidArguments, err.Error(),
			`send {"kind":"sessions","schema":null,"limit":null}; kinds: `+kindList())
	}
	_, err = d.statement(ctx, tc, op, a, notes, contracts.ExecRequest{
		Kind: contracts.OperationsKind(a.Kind), Schema: a.Schema, Limit: a.Limit, Profile: contracts.ProfileAgentOperations})
	return false, err
}

func kindList() string {
	names := make([]string, len(contracts.OperationsKinds))
	for i, k := range contracts.OperationsKinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// planStep is a plan this run read: its step and the statement it planned.
type planStep struct {
	step contracts.Step
	args planArgs
}

// plans lists the estimating plans this run read, by correlation id.
func (d *drive) plans() map[string]planStep {
	out := map[string]planStep{}
	for _, st := range d.record().Steps {
		if st.Tool != policy.ToolInspectPlan || st.Status != contracts.StepCompleted || st.Artifact == nil {
			continue
		}
		a, _, _ := decodePlan(string(st.Arguments))
		out[st.Artifact.CorrelationID] = planStep{step: st, args: a}
	}
	return out
}

// callComparePlans records a comparison of two plans the run read. The
// model names two ids; the statements and plans come from the ledger and
// the summary is the server's. Plans read in the same turn may be named:
// unlike a citation, a comparison states nothing of the model's about rows
// it has not seen — the server reads both plans and writes the summary,
// which the model reads next turn like any result.
func (d *drive) callComparePlans(ctx context.Context, _ contracts.ExecOp, tc contracts.ToolCall, raw string) (bool, error) {
	a, notes, err := decodeCompare(raw, d.producedIDs())
	if err != nil {
		return false, d.refuse(ctx, tc, "", refuseInvalidArguments, err.Error(), d.compareExample())
	}
	if a.Before == a.After {
		return false, d.refuse(ctx, tc, "", refuseInvalidArguments, "before and after name the same plan",
			"inspect the plan of the rewrite (or with a hypothetical index) and compare the two ids")
	}
	plans := d.plans()
	var sides [2]planStep
	for i, id := range []string{a.Before, a.After} {
		ps, ok := plans[id]
		if !ok || ps.step.Plan == nil {
			return false, d.refuse(ctx, tc, "", contracts.RefuseUnverifiablePlan,
				fmt.Sprintf("%s is not an estimating plan this run read", quote(id)), "compare the ids of two inspect_plan results: "+planIDs(plans))
		}
		if !d.held(ctx, id) {
			return false, d.refuse(ctx, tc, "", contracts.RefusePlanResultReleased,
				fmt.Sprintf("the plan %s is this run's, and its rows are no longer held", id),
				"inspect the plan again and compare the new result")
		}
		sides[i] = ps
	}
	summary := comparePlans(sides[0].step.Plan, sides[1].step.Plan)
	content := fmt.Sprintf("Comparison recorded (%s before, %s after).\n%s\n%s", a.Before, a.After, summary, estimatesOnly)
	return false, d.append(ctx, contracts.KindPlanComparison, contracts.PlanComparison{
		ToolCall: tc, Before: a.Before, After: a.After,
		BeforeSQL: sides[0].args.SQL, AfterSQL: sides[1].args.SQL, BeforePlan: sides[0].step.Plan, AfterPlan: sides[1].step.Plan,
		Summary: summary + " " + estimatesOnly, Content: content + d.status(tc.Turn, false, false), Normalised: notes,
	})
}

func planIDs(plans map[string]planStep) string {
	if len(plans) == 0 {
		return "this run has read no plan yet (call inspect_plan)"
	}
	ids := make([]string, 0, len(plans))
	for id := range plans {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return strings.Join(ids, ", ")
}

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

// comparePlans is the server's account of two plans: per relation, how its
// access changed; the engine's cost and row estimates and their ratio.
// Names are quoted and escaped (a plan names what anyone who can write to
// the database named).
func comparePlans(before, after *contracts.PlanSummary) string {
	var parts []string
	access := func(p *contracts.PlanSummary) map[string]contracts.RelationAccess {
		m := map[string]contracts.RelationAccess{}
		for _, a := range p.Access {
			m[a.Relation] = a
		}
		return m
	}
	ba, aa := access(before), access(after)
	var names []string
	for _, a := range before.Access {
		names = append(names, a.Relation)
	}
	for _, a := range after.Access {
		if _, ok := ba[a.Relation]; !ok {
			names = append(names, a.Relation)
		}
	}
	for _, n := range names {
		b, inB := ba[n]
		a, inA := aa[n]
		switch {
		case inB && inA && b.Access == a.Access:
			parts = append(parts, fmt.Sprintf("%s: %s in both", quote(n), a.Access))
		case inB && inA:
			parts = append(parts, fmt.Sprintf("%s: %s before, %s after%s", quote(n), b.Access, a.Access, indexNote(a)))
		case inB:
			parts = append(parts, fmt.Sprintf("%s: %s before, not read after", quote(n), b.Access))
		default:
			parts = append(parts, fmt.Sprintf("%s: not read before, %s after%s", quote(n), a.Access, indexNote(a)))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "neither plan names a relation the summary could read")
	}
	out := "Access: " + strings.Join(parts, "; ") + "."
	if c := estimateChange("cost", before.Cost, after.Cost); c != "" {
		out += " " + c
	}
	if c := estimateChange("rows", before.Rows, after.Rows); c != "" {
		out += " " + c
	}
	if before.Cost == nil && after.Cost == nil {
		out += " The engine reports no cost estimates, so none are compared."
	}
	if after.HypotheticalIndex != "" {
		out += " The after plan assumes the hypothetical index " + quote(after.HypotheticalIndex) + "; nothing was created."
	}
	return out
}

func indexNote(a contracts.RelationAccess) string {
	if a.Index == "" {
		return ""
	}
	return " (" + quote(a.Index) + ")"
}

func estimateChange(what string, b, a *float64) string {
	if b == nil || a == nil {
		return ""
	}
	s := fmt.Sprintf("Estimated %s %s → %s", what, trimFloat(*b), trimFloat(*a))
	if *b > 0 {
		s += fmt.Sprintf(" (×%s)", trimFloat(math.Round(*a / *b * 1000)/1000))
	}
	return s + "."
}

func trimFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// callRecommendChange records one change for the user; nothing is run. An
// index recommendation that cites no plan is recorded, and told that its
// verdict needs one: the rule judges it, not this tool.
func (d *drive) callRecommendChange(ctx context.Context, _ contracts.ExecOp, tc contracts.ToolCall, raw string) (bool, error) {
	a, notes, err := decodeRecommend(raw, d.producedIDs())
	if err != nil {
		return false, d.refuse(ctx, tc, "", refuseInvalidArguments, err.Error(),
			`send {"kind":"index","statement":"CREATE INDEX …","rationale":"…","evidence":[`+artifactRef(d.exampleID("<the id of the result it rests on>", policy.ToolInspectPlan, policy.ToolInspectOperations, policy.ToolRunReadQuery))+`]}`)
	}
	produced := d.producedRefs()
	var unresolved []string
	for _, ref := range a.Evidence {
		if !produced(ref) {
			b, _ := json.Marshal(ref)
			unresolved = append(unresolved, string(b))
		}
	}
	if len(unresolved) > 0 {
		_, list := d.citableAt(tc.Turn)
		return false, d.refuse(ctx, tc, "", refuseUnresolved, "the recommendation cites "+strings.Join(unresolved, ", ")+", which this run did not produce", list)
	}
	// A recommendation rests on what the model saw, as a claim does.
	if unseen := d.unseen(tc.Turn, a.Evidence); len(unseen) > 0 {
		return false, d.refuseUnseen(ctx, tc, unseen, "recommend in a later turn than the plan or reading it rests on, once you have read it")
	}
	plans := d.plans()
	var diagnosed []string
	for _, ref := range a.Evidence {
		if _, ok := plans[ref.CorrelationID]; ok && ref.Source == contracts.EvidenceArtifact {
			diagnosed = append(diagnosed, ref.CorrelationID)
		}
	}
	content := fmt.Sprintf("Recommendation recorded (%s); it is offered to the user and never executed.", a.Kind)
	if len(notes) > 0 {
		content += " Read leniently: " + strings.Join(notes, "; ") + "."
	}
	if a.Kind == contracts.RecommendIndex && len(diagnosed) == 0 && slices.Contains(d.header.Tools, policy.ToolInspectPlan) {
		content += " It cites no plan: an index recommendation rests on the inspect_plan result that shows the scan it removes; cite one in a further recommendation."
	}
	return false, d.append(ctx, contracts.KindRecommendation, contracts.Recommendation{
		ToolCall: tc, Kind: a.Kind, Statement: a.Statement, Rationale: a.Rationale, Evidence: a.Evidence, Diagnosed: diagnosed,
		Content: content + d.status(tc.Turn, false, false), Normalised: notes,
	})
}

// producedRefs returns the check compose_report applies to a citation.
func (d *drive) producedRefs() func(contracts.EvidenceRef) bool {
	return verdict.ProducedBy(d.entries).Resolves
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
