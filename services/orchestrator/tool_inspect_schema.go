package orchestrator

import (
	"bytes"
	"context"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
)

// inspect_schema reads the schema with the server's own catalog query.
var inspectSchemaTool = tool{
	spec: declare(policy.ToolInspectSchema, schemaArgs{}, "Read the connected database's schema; the server writes the catalog query. "+
		`{"table":"name"} describes one table (columns, keys, indexes, estimated rows); {"schema":"name"} or `+
		`{"pattern":"*word*"} lists the matching tables; {} lists them all. A listing too long for one result comes `+
		`back as a page of names with the "after" value that asks for the next page. The result names an artifact you can cite as `+
		`{"source":"artifact","correlationId":"…"}.`),
	brief: "describes tables (the server writes that query)",
	op:    contracts.OpSchema,
	// The server's own query is never a repair: it still answers once the
	// repairs are spent.
	repairBound: false,
	step:        asStep(decodeSchema),
	call:        (*drive).callInspectSchema,
}

// schemaArgs are inspect_schema's: one table to describe, or a listing
// narrowed by schema and name pattern, paged by after.
type schemaArgs struct {
	Table   string `json:"table,omitempty" arg:"nullable" aka:"table_name,tableName" doc:"one table or view to describe, optionally schema-qualified; null to list"`
	Schema  string `json:"schema,omitempty" arg:"nullable" aka:"schema_name" doc:"list the tables of this schema; null for every schema"`
	Pattern string `json:"pattern,omitempty" arg:"nullable" doc:"list the tables whose name matches: * any run of characters, ? one; null for no filter"`
	After   string `json:"after,omitempty" arg:"nullable" doc:"continue a listing after this name, as the previous page said; null for the first page"`
}

func (a schemaArgs) writeStep(b *bytes.Buffer) {
	b.WriteString(a.Schema)
	b.WriteByte(0)
	b.WriteString(a.Table)
	if a.Pattern != "" || a.After != "" {
		// Appended only when set, so steps recorded before these
		// arguments existed keep their ids.
		b.WriteByte(0)
		b.WriteString(a.Pattern)
		b.WriteByte(0)
		b.WriteString(a.After)
	}
}

var schemaFields = fieldsOf(schemaArgs{})

// decodeSchema reads inspect_schema's arguments.
func decodeSchema(raw string) (schemaArgs, []string, error) {
	m, notes, err := object(policy.ToolInspectSchema, raw)
	if err != nil {
		return schemaArgs{}, notes, err
	}
	out := map[string]string{}
	n, err := fields(policy.ToolInspectSchema, m, schemaFields, out)
	return schemaArgs{Table: out["table"], Schema: out["schema"], Pattern: out["pattern"], After: out["after"]}, append(notes, n...), err
}

// callInspectSchema reads the schema with the server's own query.
func (d *drive) callInspectSchema(ctx context.Context, op contracts.ExecOp, tc contracts.ToolCall, raw string) (bool, error) {
	a, notes, err := decodeSchema(raw)
	if err != nil {
		return false, d.refuse(ctx, tc, "", refuseInvalidArguments, err.Error(), `send {}, {"table":"…"}, {"schema":"…"} or {"pattern":"*word*"}`)
	}
	_, err = d.statement(ctx, tc, op, a, notes,
		contracts.ExecRequest{Schema: a.Schema, Table: a.Table, Pattern: a.Pattern, After: a.After})
	return false, err
}
