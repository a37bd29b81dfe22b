package orchestrator

import (
	"bytes"
	"context"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
)

// inspect_plan asks for the estimating plan of the model's statement.
var inspectPlanTool = tool{
	spec: declare(policy.ToolInspectPlan, planArgs{}, "Show the database's estimating plan for one SELECT without running it: how each table is read "+
		"(full scan or index) and the engine's cost and row estimates. The statement is checked exactly like a read. "+
		`The result names an artifact you can cite as {"source":"artifact","correlationId":"…"}.`),
	brief:       "shows how the database would run a SELECT, without running it",
	op:          contracts.OpExplain,
	repairBound: true,
	step:        asStep(decodePlan),
	call:        (*drive).callInspectPlan,
}

// planArgs are inspect_plan's: a statement the executor plans, never runs,
// as the database is or as if a hypothetical index existed.
type planArgs struct {
	SQL          string `json:"sql" arg:"statement" aka:"query,statement" doc:"the SELECT statement to plan, in the database's dialect; it is not run"`
	Reason       string `json:"reason,omitempty" arg:"nullable" doc:"what the plan should show, in one sentence"`
	Hypothetical string `json:"hypotheticalIndex,omitempty" arg:"nullable,statement" aka:"hypothetical_index,index" doc:"a CREATE INDEX statement to plan as if it existed; nothing is created (PostgreSQL with hypopg only; refused elsewhere); null for the database as it is"`
}

func (a planArgs) writeStep(b *bytes.Buffer) {
	b.WriteString(canonicalSQL(a.SQL))
	if a.Hypothetical != "" {
		// Appended only when set: a plain plan keeps its id.
		b.WriteByte(0)
		b.WriteString(canonicalSQL(a.Hypothetical))
	}
}

var planFields = fieldsOf(planArgs{})

// decodePlan reads inspect_plan's arguments.
func decodePlan(raw string) (planArgs, []string, error) {
	m, notes, err := object(policy.ToolInspectPlan, raw)
	if err != nil {
		return planArgs{}, notes, err
	}
	out := map[string]string{}
	n, err := fields(policy.ToolInspectPlan, m, planFields, out)
	return planArgs{SQL: out["sql"], Reason: out["reason"], Hypothetical: out["hypotheticalIndex"]}, append(notes, n...), err
}

// callInspectPlan asks for the estimating plan of the model's statement.
func (d *drive) callInspectPlan(ctx context.Context, op contracts.ExecOp, tc contracts.ToolCall, raw string) (bool, error) {
	a, notes, err := decodePlan(raw)
	if err != nil {
		return false, d.refuse(ctx, tc, "", refuseInvalidArguments, err.Error(), `send {"sql":"SELECT …","reason":"…","hypotheticalIndex":null}`)
	}
	_, err = d.statement(ctx, tc, op, a, notes, contracts.ExecRequest{SQL: a.SQL, HypotheticalIndex: a.Hypothetical})
	return false, err
}
