package orchestrator

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/policy"
)

// profile_table counts one table's rows and values; the server writes the
// statement, and no value from the table is read.
var profileTableTool = tool{
	spec: declare(policy.ToolProfileTable, profileArgs{}, "Profile one table: the server writes the statement and counts rows, values present per column and, deeper, distinct values "+
		"and personal-data shapes. Counts only: no value from the table is ever read. Findings (high_null, constant, low_cardinality, suspected_pii, fk_unindexed) "+
		`are the server's. The result names an artifact you can cite as {"source":"artifact","correlationId":"…"}.`),
	brief:       "counts a table's rows, present and distinct values (the server writes that query; no value is read)",
	op:          contracts.OpProfile,
	repairBound: true,
	step:        asStep(decodeProfile),
	call:        (*drive).callProfileTable,
}

// profileArgs are profile_table's: the table, how deep to count, and the
// column a wide table's profile continues from.
type profileArgs struct {
	Table      string `json:"table" aka:"table_name,tableName,name" doc:"the table, as the schema names it; qualify it with its schema when two schemas hold the name"`
	Depth      string `json:"depth,omitempty" arg:"nullable" enum:"basic,distribution,pattern" doc:"basic: rows and values present; distribution: adds distinct counts; pattern: adds email and long-digit shapes; null for basic"`
	FromColumn string `json:"fromColumn,omitempty" arg:"nullable" aka:"from_column,column" doc:"for a wide table, the column to continue from, as the previous profile said; null to start at the first"`
}

func (a profileArgs) writeStep(b *bytes.Buffer) {
	fmt.Fprintf(b, "%s\x00%s\x00%s", a.Table, a.Depth, a.FromColumn)
}

var profileFields = fieldsOf(profileArgs{})

// decodeProfile reads profile_table's arguments.
func decodeProfile(raw string) (profileArgs, []string, error) {
	m, notes, err := object(policy.ToolProfileTable, raw)
	if err != nil {
		return profileArgs{}, notes, err
	}
	out := map[string]string{}
	n, err := fields(policy.ToolProfileTable, m, profileFields, out)
	notes = append(notes, n...)
	if err != nil {
		return profileArgs{}, notes, err
	}
	a := profileArgs{Table: out["table"], Depth: out["depth"], FromColumn: out["fromColumn"]}
	if a.Depth != "" && !slices.Contains(contracts.ProfileDepths, contracts.ProfileDepth(a.Depth)) {
		return a, notes, &argError{msg: fmt.Sprintf("profile_table's depth %s is none of basic, distribution, pattern", fence.Quote(a.Depth))}
	}
	return a, notes, nil
}

// callProfileTable asks the executor to profile one table, and records the
// profile beside the step.
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
