package orchestrator

import (
	"context"
	"fmt"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/grounding"
	"github.com/sondehq/sonde/pkg/policy"
)

// planReadsProse reports workflows whose plan is prose: a fenced statement
// is welcome there, never required.
func planReadsProse(w contracts.WorkflowType) bool { return policy.Workflows[w].PlanIsProse }

// planningPrompt is a planning run's system prompt: no tools, the engine and
// its dialect, the workflow's deliverable, and the two ways to end.
func planningPrompt(h *contracts.RunStarted) string {
	tag := string(h.Engine)
	var b strings.Builder
	b.WriteString("You are Sonde, planning against a production database. You run nothing: you have no tools, and the user runs what you write.\n")
	b.WriteString(dialectRules(h.Engine))
	fmt.Fprintf(&b, "Workflow: %s: %s. Your deliverable is %s.\n", h.WorkflowType, policy.Workflows[h.WorkflowType].Goal, policy.Workflows[h.WorkflowType].PlanDeliverable)
	if planReadsProse(h.WorkflowType) {
		fmt.Fprintf(&b, "Write the plan as prose. A statement, if any, goes in a fenced code block tagged %s.\n", tag)
	} else {
		fmt.Fprintf(&b, "Write the statement in ONE fenced code block tagged %s (```%s on its own line, the statement, ``` on its own line), then your rationale after it.\n", tag, tag)
		b.WriteString("Read only: a SELECT (or WITH … SELECT). Name only tables and columns the schema snapshot lists.\n")
		fmt.Fprintf(&b, "If the snapshot cannot answer the objective, write no block: write one line beginning %s saying exactly what is missing and the one question that would unblock you.\n", grounding.NoStatementMarker)
	}
	b.WriteString(fence.Instructions + "\n")
	return b.String()
}

// planReminder is said once when a planning run's answer held no
// deliverable.
func planReminder(h *contracts.RunStarted) string {
	if planReadsProse(h.WorkflowType) {
		return "Write the plan as prose now."
	}
	return fmt.Sprintf("Your answer held no fenced code block tagged %s and no line beginning %s. "+
		"Answer again with exactly one of the two.", h.Engine, grounding.NoStatementMarker)
}

// plan is a planning run's loop: toolless turns until the model's text holds
// its deliverable (a statement fenced with the engine's tag, or a NO
// STATEMENT: line; prose for an operations plan). An answer without one is
// reminded once. The drafted statement is classified by the guard and its
// names checked against the inventory; it is never executed.
func (d *drive) plan(ctx context.Context) error {
	reminded := hasEntry(d.entries, contracts.KindClosingStatement)
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
		del := grounding.ReadDeliverable(reply.Text, d.header.Engine)
		if del.SQL != "" && !planReadsProse(d.header.WorkflowType) {
			if err := d.recordPlan(ctx, turn, del); err != nil {
				return err
			}
			return d.finish(ctx, contracts.StatusSucceeded, contracts.StopModelStopped, "", "", true)
		}
		prose := strings.TrimSpace(reply.Text) != ""
		if del.Declined || planReadsProse(d.header.WorkflowType) && prose {
			return d.finish(ctx, contracts.StatusSucceeded, contracts.StopModelStopped, "", "", true)
		}
		if !reminded {
			reminded = true
			continue
		}
		return d.finish(ctx, contracts.StatusFailed, contracts.StopModelStopped, "",
			fmt.Sprintf("The model wrote no statement fenced as %s and no %s line.", d.header.Engine, grounding.NoStatementMarker), true)
	}
}

// recordPlan records the drafted statement with the guard's classification
// (asked of the executor, which parses with the engine's own parser and
// runs nothing) and the identifier check against the run's inventory.
func (d *drive) recordPlan(ctx context.Context, turn int, del grounding.Deliverable) error {
	ev := contracts.PlanStatementDrafted{Turn: turn, SQL: del.SQL, Dialect: d.header.Engine}
	if del.OtherBlocks > 0 {
		ev.Note = fmt.Sprintf("%d other fenced blocks in the answer were not read as the statement.", del.OtherBlocks)
	}
	reply, err := d.execute(ctx, contracts.OpCheck, contracts.ExecRequest{
		RunID: d.runID, StepID: "plan", ConnectionID: d.header.ConnectionID,
		Profile: contracts.ProfileAgentReadOnly, SQL: del.SQL, TimeoutMs: d.statementTimeout(d.record()),
	})
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil || reply.Status != contracts.ExecOK || reply.Check == nil:
		ev.Identifiers = contracts.IdentifierCheck{Status: contracts.IdentifiersUnread}
		ev.Note = strings.TrimSpace(ev.Note + " The guard could not be asked about the statement, so it is not classified.")
	default:
		ev.ReadOnly, ev.Refusal = reply.Check.ReadOnly, reply.Check.Refusal
		ev.Identifiers = grounding.Identifiers(d.inventory(ctx), reply.Check)
	}
	return d.append(ctx, contracts.KindPlanStatementDrafted, ev)
}
