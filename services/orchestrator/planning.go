package orchestrator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/grounding"
	"github.com/sondehq/sonde/pkg/policy"
	"github.com/sondehq/sonde/pkg/verdict"
)

// planReadsProse reports workflows whose plan is prose: a fenced statement
// is welcome there, never required.
func planReadsProse(w contracts.WorkflowType) bool { return policy.Workflows[w].PlanIsProse }

// planningPrompt is a planning run's system prompt: no tools, the engine and
// its dialect, the workflow's deliverable, what that deliverable may be
// (the rules and the deliverable agree: a query optimisation may hand over
// an index), and the two ways to end.
func planningPrompt(h *contracts.RunStarted) string {
	tag := string(h.Engine)
	row := policy.Workflows[h.WorkflowType]
	var b strings.Builder
	b.WriteString("You are Sonde, planning against a production database. You run nothing: you have no tools, and the user runs what you write.\n")
	b.WriteString(dialectRules(h.Engine))
	fmt.Fprintf(&b, "Workflow: %s: %s. Your deliverable is %s.\n", h.WorkflowType, row.Goal, row.PlanDeliverable)
	switch {
	case planReadsProse(h.WorkflowType):
		fmt.Fprintf(&b, "Write the plan as prose. A statement, if any, goes in a fenced code block tagged %s.\n", tag)
	default:
		fmt.Fprintf(&b, "Write the statement in ONE fenced code block tagged %s (```%s on its own line, the statement, ``` on its own line), then your rationale after it.\n", tag, tag)
		b.WriteString(planStatementRule(row))
		fmt.Fprintf(&b, "If the snapshot cannot answer the objective, write no block: write one line beginning %s saying exactly what is missing and the one question that would unblock you.\n", grounding.NoStatementMarker)
	}
	b.WriteString(fence.Instructions + "\n")
	return b.String()
}

// planStatementRule says what the one fenced statement may be: a read, or,
// where the row allows it, one CREATE INDEX the user applies. The guard
// holds the draft to exactly this (verdict.PlanFaults).
func planStatementRule(row policy.Workflow) string {
	if row.PlanMayIndex {
		return "The statement is either the rewritten query, read only: a SELECT (or WITH … SELECT) returning what the user's query returns; " +
			"or one CREATE INDEX on plain columns of a table the snapshot lists, which the user reviews and applies. Nothing else: no other DDL, no writes. " +
			"Name only tables and columns the schema snapshot lists.\n"
	}
	return "Read only: a SELECT (or WITH … SELECT). Name only tables and columns the schema snapshot lists.\n"
}

// planReminder is said once when a planning run's answer held no
// deliverable: no candidate block and no NO STATEMENT: line, or several
// different statements (del.Candidates).
func planReminder(h *contracts.RunStarted, del grounding.Deliverable) string {
	if planReadsProse(h.WorkflowType) {
		return "Write the plan as prose now."
	}
	if del.Candidates > 1 {
		return fmt.Sprintf("Your answer held %d different statements in fenced code blocks, and the deliverable is exactly one: Sonde does not choose for the user. "+
			"Answer again with the one statement in one fenced code block tagged %s, or one line beginning %s.", del.Candidates, h.Engine, grounding.NoStatementMarker)
	}
	return fmt.Sprintf("Your answer held no fenced code block tagged %s and no line beginning %s. "+
		"Answer again with exactly one of the two.", h.Engine, grounding.NoStatementMarker)
}

// planRepair is the one repair turn's message: the guard's refusal (code,
// reason, fix), the names the snapshot lacks with the names it holds near
// them, and what to answer. Everything quoted from the draft is
// neutralised: it is the model's text, not the server's.
func planRepair(h *contracts.RunStarted, p *contracts.PlanStatementDrafted, faults []string) string {
	var b strings.Builder
	b.WriteString("Sonde's guard read your statement without running it, and it is not a deliverable:")
	if slices.Contains(faults, verdict.UnmetPlanRefused) && p.Refusal != nil {
		fmt.Fprintf(&b, "\n- Refused (%s): %s.", p.Refusal.Code, fence.Neutralise(strings.TrimSuffix(p.Refusal.Message, ".")))
		if p.Refusal.Fix != "" {
			fmt.Fprintf(&b, " Fix: %s.", fence.Neutralise(strings.TrimSuffix(p.Refusal.Fix, ".")))
		}
		if p.Refusal.Code == contracts.RefuseUnparsable || p.Refusal.Code == contracts.RefuseEngineParse {
			b.WriteString("\n- " + strings.ReplaceAll(strings.TrimSpace(dialectRules(h.Engine)), "\n", "\n  "))
		}
	}
	if slices.Contains(faults, verdict.UnmetUnknownNames) {
		names := append(slices.Clone(p.Identifiers.UnknownRelations), p.Identifiers.UnknownColumns...)
		fmt.Fprintf(&b, "\n- It names what the schema snapshot does not hold: %s.", fence.Neutralise(strings.Join(names, ", ")))
	}
	if p.Note != "" {
		b.WriteString("\n- " + fence.Neutralise(p.Note))
	}
	fmt.Fprintf(&b, "\nAnswer once more: the corrected statement in one fenced code block tagged %s, or one line beginning %s saying what is missing. "+
		"That answer is recorded and judged as it is; there is no further turn.", h.Engine, grounding.NoStatementMarker)
	return b.String()
}

// planNudge is what the server says after a planning run's answer on turn,
// rebuilt from the ledger alone (transcript.go): the repair when that
// turn's draft has faults the model can mend, else the reminder.
func planNudge(h *contracts.RunStarted, entries []contracts.Entry, turn int) string {
	if p, ok := draftOf(entries, turn); ok {
		if faults := repairable(h, &p); len(faults) > 0 {
			return planRepair(h, &p, faults)
		}
	}
	var text string
	for _, e := range entries {
		if e.Kind != contracts.KindClosingStatement {
			continue
		}
		if v, err := e.Decode(); err == nil && v.(*contracts.ClosingStatement).Turn == turn {
			text = v.(*contracts.ClosingStatement).Text
		}
	}
	return planReminder(h, grounding.ReadDeliverable(text, h.Engine))
}

// repairable returns a draft's faults when the model can mend them (the
// guard refused it, or it names unknown things); a draft the guard could
// not be asked about is not the model's to repair.
func repairable(h *contracts.RunStarted, p *contracts.PlanStatementDrafted) []string {
	faults := verdict.PlanFaults(*h, *p)
	if slices.Contains(faults, verdict.UnmetPlanRefused) || slices.Contains(faults, verdict.UnmetUnknownNames) {
		return faults
	}
	return nil
}

// plan is a planning run's loop: toolless turns until the model's text holds
// its deliverable (one statement in a fenced block, or a NO STATEMENT:
// line; prose for an operations plan). The drafted statement is classified
// by the guard and its names checked against the inventory; it is never
// executed. The model gets one answer more, whatever was wrong with its
// first: an answer without a deliverable is reminded, a draft the guard
// refuses or that names what the snapshot lacks is shown why (the repair
// turn). That second answer is recorded and judged as it is.
func (d *drive) plan(ctx context.Context) error {
	second := hasEntry(d.entries, contracts.KindClosingStatement)
	if cs, answers, ok := d.lastAnswer(); ok {
		// A resumed drive decides on the answer it last recorded first: a
		// drive stopped after the answer, before its draft or its ending.
		if done, err := d.planAnswer(ctx, cs.Turn, cs.Text, answers > 1); err != nil || done {
			return err
		}
	}
	noNotice := func(contracts.Record) string { return "" }
	for {
		turn, reply, over, err := d.nextTurn(ctx, []contracts.ToolSpec{}, noNotice) // toolless by construction
		if over {
			return err
		}
		usage := reply.Usage
		// A model that asks for a tool anyway has its calls ignored: only
		// its text is a plan.
		if err := d.append(ctx, contracts.KindClosingStatement, contracts.ClosingStatement{Turn: turn, Text: reply.Text, Usage: &usage, ModelMs: d.turnMs}); err != nil {
			return err
		}
		if done, err := d.planAnswer(ctx, turn, reply.Text, second); err != nil || done {
			return err
		}
		second = true
	}
}

// planAnswer reads one answer's deliverable and decides: finish, or (on a
// first answer, last false) give the model its one answer more.
func (d *drive) planAnswer(ctx context.Context, turn int, text string, last bool) (bool, error) {
	del := grounding.ReadDeliverable(text, d.header.Engine)
	if planReadsProse(d.header.WorkflowType) {
		if strings.TrimSpace(text) != "" {
			return true, d.finish(ctx, contracts.StatusSucceeded, contracts.StopModelStopped, "", "", true)
		}
	} else if del.SQL != "" {
		p, ok := draftOf(d.entries, turn)
		if !ok {
			var err error
			if p, err = d.recordPlan(ctx, turn, del); err != nil {
				return true, err
			}
		}
		if !last && len(repairable(&d.header, &p)) > 0 {
			return false, nil // the repair turn: planNudge shows the model why
		}
		return true, d.finish(ctx, contracts.StatusSucceeded, contracts.StopModelStopped, "", "", true)
	}
	if del.Declined {
		return true, d.finish(ctx, contracts.StatusSucceeded, contracts.StopModelStopped, "", "", true)
	}
	if !last {
		return false, nil
	}
	if hasEntry(d.entries, contracts.KindPlanStatementDrafted) {
		// The repair was answered with no statement: the refused draft is
		// what the run drafted, and the verdict judges it.
		return true, d.finish(ctx, contracts.StatusSucceeded, contracts.StopModelStopped, "", "", true)
	}
	return true, d.finish(ctx, contracts.StatusFailed, contracts.StopModelStopped, "",
		fmt.Sprintf("The model wrote no statement fenced as %s and no %s line.", d.header.Engine, grounding.NoStatementMarker), true)
}

// lastAnswer returns the run's last recorded answer, with how many answers
// it has given; ok is false before the first.
func (d *drive) lastAnswer() (contracts.ClosingStatement, int, bool) {
	var last contracts.ClosingStatement
	answers := 0
	for _, e := range d.entries {
		if e.Kind != contracts.KindClosingStatement {
			continue
		}
		if v, err := e.Decode(); err == nil {
			last = *v.(*contracts.ClosingStatement)
			answers++
		}
	}
	return last, answers, answers > 0
}

// draftOf returns the draft recorded for turn, if any.
func draftOf(entries []contracts.Entry, turn int) (contracts.PlanStatementDrafted, bool) {
	for _, e := range entries {
		if e.Kind != contracts.KindPlanStatementDrafted {
			continue
		}
		if v, err := e.Decode(); err == nil && v.(*contracts.PlanStatementDrafted).Turn == turn {
			return *v.(*contracts.PlanStatementDrafted), true
		}
	}
	return contracts.PlanStatementDrafted{}, false
}

// recordPlan records the drafted statement with the guard's classification
// (asked of the executor, which parses with the engine's own parser and
// runs nothing) and the identifier check against the run's inventory. A
// query optimisation's CREATE INDEX, which the guard refuses as not a
// read, has its table and columns checked instead. Names the snapshot
// lacks are noted with the names it holds near them, for the repair turn.
func (d *drive) recordPlan(ctx context.Context, turn int, del grounding.Deliverable) (contracts.PlanStatementDrafted, error) {
	ev := contracts.PlanStatementDrafted{Turn: turn, SQL: del.SQL, Dialect: d.header.Engine}
	var notes []string
	if del.ForeignTag {
		tag := del.Tag
		if tag == "" {
			tag = "(untagged)"
		}
		notes = append(notes, fmt.Sprintf("The statement was read from a block tagged %s, not %s; the guard judged it as %s.", tag, d.header.Engine, engineName(d.header.Engine)))
	}
	if del.OtherBlocks > 0 {
		notes = append(notes, fmt.Sprintf("%d other fenced blocks in the answer were not read as the statement.", del.OtherBlocks))
	}
	reply, err := d.execute(ctx, contracts.OpCheck, contracts.ExecRequest{
		RunID: d.runID, StepID: "plan", ConnectionID: d.header.ConnectionID,
		Profile: contracts.ProfileAgentReadOnly, SQL: del.SQL, TimeoutMs: d.statementTimeout(d.record()),
	})
	switch {
	case ctx.Err() != nil:
		return ev, ctx.Err()
	case err != nil || reply.Status != contracts.ExecOK || reply.Check == nil:
		ev.Identifiers = contracts.IdentifierCheck{Status: contracts.IdentifiersUnread}
		notes = append(notes, "The guard could not be asked about the statement, so it is not classified.")
	default:
		ev.ReadOnly, ev.Refusal = reply.Check.ReadOnly, reply.Check.Refusal
		inv, chk := d.inventory(ctx), reply.Check
		if verdict.IndexRecommendation(d.header, ev) {
			ix, _ := grounding.ReadIndex(del.SQL, d.header.Engine)
			chk = grounding.IndexCheck(inv, ix, d.header.Engine)
			notes = append(notes, fmt.Sprintf("Read as an index recommendation on %s for the user to review and apply; the guard reads drafts as reads, so it is judged by its table and columns.",
				grounding.QualifiedName(chk.Relations[0].Schema, chk.Relations[0].Name)))
		}
		ev.Identifiers = grounding.Identifiers(inv, chk)
		if near := grounding.Nearest(inv, chk); len(near) > 0 && len(ev.Identifiers.UnknownRelations)+len(ev.Identifiers.UnknownColumns) > 0 {
			notes = append(notes, "The snapshot's closest names: "+strings.Join(near, "; ")+".")
		}
	}
	ev.Note = strings.Join(notes, " ")
	return ev, d.append(ctx, contracts.KindPlanStatementDrafted, ev)
}
