package orchestrator

import (
	"bytes"
	"context"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
)

// run_read_query runs one SELECT the model wrote.
var runReadQueryTool = tool{
	spec: declare(policy.ToolRunReadQuery, readArgs{}, "Run one read-only SELECT (or WITH … SELECT) statement. At most 200 rows and 256 KiB: "+
		"aggregate or add LIMIT. The result names an artifact you can cite as "+
		`{"source":"artifact","correlationId":"…"}.`),
	brief:       "runs one SELECT you write",
	op:          contracts.OpRead,
	repairBound: true,
	step:        asStep(decodeRead),
	call:        (*drive).callRunReadQuery,
}

// readArgs are run_read_query's: the statement, and the model's prose
// reason (which is not part of the step).
type readArgs struct {
	SQL    string `json:"sql" arg:"statement" aka:"query,statement" doc:"one SELECT statement in the database's dialect, no trailing semicolon needed"`
	Reason string `json:"reason,omitempty" arg:"nullable" doc:"what this reading should show, in one sentence"`
}

func (a readArgs) writeStep(b *bytes.Buffer) { b.WriteString(canonicalSQL(a.SQL)) }

var readFields = fieldsOf(readArgs{})

// decodeRead reads run_read_query's arguments.
func decodeRead(raw string) (readArgs, []string, error) {
	m, notes, err := object(policy.ToolRunReadQuery, raw)
	if err != nil {
		return readArgs{}, notes, err
	}
	out := map[string]string{}
	n, err := fields(policy.ToolRunReadQuery, m, readFields, out)
	return readArgs{SQL: out["sql"], Reason: out["reason"]}, append(notes, n...), err
}

// callRunReadQuery runs the model's statement.
func (d *drive) callRunReadQuery(ctx context.Context, op contracts.ExecOp, tc contracts.ToolCall, raw string) (bool, error) {
	a, notes, err := decodeRead(raw)
	if err != nil {
		return false, d.refuse(ctx, tc, "", refuseInvalidArguments, err.Error(), `send {"sql":"SELECT …","reason":"…"}`)
	}
	_, err = d.statement(ctx, tc, op, a, notes, contracts.ExecRequest{SQL: a.SQL})
	return false, err
}
