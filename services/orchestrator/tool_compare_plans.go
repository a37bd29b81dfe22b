package orchestrator

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/policy"
)

// compare_plans compares two plans this run read; it runs nothing, and the
// summary is the server's.
var comparePlansTool = tool{
	spec: declare(policy.ToolComparePlans, compareArgs{}, "Compare two estimating plans this run read with inspect_plan (before and after a rewrite, or without and with a hypothetical index). "+
		"Name the two plan results by their ids; the server reads the statements and the plans from the run's record and says what changed. Runs nothing."),
	brief: "compares two plans this run read (runs nothing)",
	call:  (*drive).callComparePlans,
}

// compareArgs are compare_plans': the ids of two plan results. Each is read
// by idField (a reference object copied whole, an id in another case).
type compareArgs struct {
	Before string `json:"before" doc:"the id of the plan result of the statement as it is, e.g. r2"`
	After  string `json:"after" doc:"the id of the plan result of the rewrite or of the plan with the hypothetical index, e.g. r4"`
}

// decodeCompare reads compare_plans' arguments; ids are the run's.
func decodeCompare(raw string, ids []string) (compareArgs, []string, error) {
	m, notes, err := object(policy.ToolComparePlans, raw)
	if err != nil {
		return compareArgs{}, notes, err
	}
	var a compareArgs
	for _, k := range sortedKeys(m) {
		v := m[k]
		var note string
		switch k {
		case "before":
			a.Before, note, err = idField(policy.ToolComparePlans, k, v, ids)
		case "after":
			a.After, note, err = idField(policy.ToolComparePlans, k, v, ids)
		default:
			err = &argError{msg: fmt.Sprintf("compare_plans has no parameter %q; its parameters are: before, after", k)}
		}
		if err != nil {
			return a, notes, err
		}
		if note != "" {
			notes = append(notes, note)
		}
	}
	if a.Before == "" || a.After == "" {
		return a, notes, &argError{msg: "compare_plans needs \"before\" and \"after\""}
	}
	return a, notes, nil
}

// estimatesOnly is said with every comparison, by the server rather than
// left to the model.
const estimatesOnly = "Estimates only: these plans were described, not executed."

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
				fmt.Sprintf("%s is not an estimating plan this run read", fence.Quote(id)), "compare the ids of two inspect_plan results: "+planIDs(plans))
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
			parts = append(parts, fmt.Sprintf("%s: %s in both", fence.Quote(n), a.Access))
		case inB && inA:
			parts = append(parts, fmt.Sprintf("%s: %s before, %s after%s", fence.Quote(n), b.Access, a.Access, indexNote(a)))
		case inB:
			parts = append(parts, fmt.Sprintf("%s: %s before, not read after", fence.Quote(n), b.Access))
		default:
			parts = append(parts, fmt.Sprintf("%s: not read before, %s after%s", fence.Quote(n), a.Access, indexNote(a)))
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
		out += " The after plan assumes the hypothetical index " + fence.Quote(after.HypotheticalIndex) + "; nothing was created."
	}
	return out
}

func indexNote(a contracts.RelationAccess) string {
	if a.Index == "" {
		return ""
	}
	return " (" + fence.Quote(a.Index) + ")"
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
