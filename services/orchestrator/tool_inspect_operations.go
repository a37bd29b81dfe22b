package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/policy"
)

// inspect_operations takes one curated reading of the server: the model
// names a kind, never a statement.
var inspectOperationsTool = tool{
	spec: declare(policy.ToolInspectOperations, operationsArgs{}, "Take one operational reading of the database server; the server writes the statement. A moment, not a history: it says what the engine reported as it was taken. "+
		"A kind this engine cannot give is refused. "+`The result names an artifact you can cite as {"source":"artifact","correlationId":"…"}.`),
	brief:       "takes one reading of the server: sessions, slow queries, table and index statistics, storage, health (the server writes that query)",
	op:          contracts.OpOperations,
	repairBound: true,
	step:        asStep(decodeOperations),
	call:        (*drive).callInspectOperations,
}

// operationsArgs are inspect_operations': the reading, the schema it is
// narrowed to, and at most how many rows.
type operationsArgs struct {
	Kind   string `json:"kind" aka:"reading" enum:"sessions,slow-queries,table-stats,index-stats,storage,health" doc:"sessions: who is connected, running what, blocked by whom; slow-queries: the costliest statements; table-stats: rows, sizes, scans; index-stats: sizes and scans (an unused index shows 0); storage: space; health: one row per figure"`
	Schema string `json:"schema,omitempty" arg:"nullable" aka:"schema_name" doc:"only relations of this schema; null for all"`
	Limit  int    `json:"limit,omitempty" arg:"nullable" doc:"at most this many rows (100 at most); null for the default"`
}

func (a operationsArgs) writeStep(b *bytes.Buffer) {
	fmt.Fprintf(b, "%s\x00%s\x00%d", a.Kind, a.Schema, a.Limit)
}

// operationsFields are the text parameters; limit is a number, read first.
var operationsFields = fieldsOf(operationsArgs{})

// decodeOperations reads inspect_operations' arguments.
func decodeOperations(raw string) (operationsArgs, []string, error) {
	m, notes, err := object(policy.ToolInspectOperations, raw)
	if err != nil {
		return operationsArgs{}, notes, err
	}
	var a operationsArgs
	if v, ok := m["limit"]; ok {
		delete(m, "limit")
		v = bytes.TrimSpace(v)
		var word string
		if json.Unmarshal(v, &word) == nil && nullWord(word) {
			notes = append(notes, fmt.Sprintf("\"limit\": the string %q read as null", word))
		} else if string(v) != "null" {
			var n json.Number
			if err := json.Unmarshal(bytes.Trim(v, `"`), &n); err != nil {
				return a, notes, &argError{msg: "inspect_operations's limit must be a whole number"}
			}
			l, err := n.Int64()
			if err != nil || l < 1 || l > contracts.MaxOperationsRows {
				return a, notes, &argError{msg: fmt.Sprintf("inspect_operations's limit must be a whole number from 1 to %d", contracts.MaxOperationsRows)}
			}
			a.Limit = int(l)
		}
	}
	out := map[string]string{}
	n, err := fields(policy.ToolInspectOperations, m, operationsFields, out)
	notes = append(notes, n...)
	if err != nil {
		return a, notes, err
	}
	a.Kind, a.Schema = out["kind"], out["schema"]
	if !slices.Contains(contracts.OperationsKinds, contracts.OperationsKind(a.Kind)) {
		return a, notes, &argError{msg: fmt.Sprintf("inspect_operations has no kind %s; the kinds are %s", fence.Quote(a.Kind), kindList())}
	}
	return a, notes, nil
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
