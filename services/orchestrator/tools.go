package orchestrator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
)

// toolSpecs declares the tools to the model. Argument schemas are strict:
// unknown properties are refused.
var toolSpecs = map[string]contracts.ToolSpec{
	policy.ToolInspectSchema: {
		Name: policy.ToolInspectSchema,
		Description: "Read the connected database's schema; the server writes the catalog query. " +
			`{"table":"name"} describes one table (columns, keys, indexes, estimated rows); {"schema":"name"} or ` +
			`{"pattern":"*word*"} lists the matching tables; {} lists them all. A listing too long for one result comes ` +
			`back as a page of names with the "after" value that asks for the next page. The result names an artifact you can cite as ` +
			`{"source":"artifact","correlationId":"…"}.`,
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"table":{"type":["string","null"],"description":"one table or view to describe, optionally schema-qualified; null to list"},` +
			`"schema":{"type":["string","null"],"description":"list the tables of this schema; null for every schema"},` +
			`"pattern":{"type":["string","null"],"description":"list the tables whose name matches: * any run of characters, ? one; null for no filter"},` +
			`"after":{"type":["string","null"],"description":"continue a listing after this name, as the previous page said; null for the first page"}},` +
			`"required":["table","schema","pattern","after"],"additionalProperties":false}`),
	},
	policy.ToolRunReadQuery: {
		Name: policy.ToolRunReadQuery,
		Description: "Run one read-only SELECT (or WITH … SELECT) statement. At most 200 rows and 256 KiB: " +
			"aggregate or add LIMIT. The result names an artifact you can cite as " +
			`{"source":"artifact","correlationId":"…"}.`,
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"sql":{"type":"string","description":"one SELECT statement in the database's dialect, no trailing semicolon needed"},` +
			`"reason":{"type":["string","null"],"description":"what this reading should show, in one sentence"}},` +
			`"required":["sql","reason"],"additionalProperties":false}`),
	},
	policy.ToolInspectPlan: {
		Name: policy.ToolInspectPlan,
		Description: "Show the database's estimating plan for one SELECT without running it: how each table is read " +
			"(full scan or index) and the engine's cost and row estimates. The statement is checked exactly like a read. " +
			`The result names an artifact you can cite as {"source":"artifact","correlationId":"…"}.`,
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"sql":{"type":"string","description":"the SELECT statement to plan, in the database's dialect; it is not run"},` +
			`"reason":{"type":["string","null"],"description":"what the plan should show, in one sentence"}},` +
			`"required":["sql","reason"],"additionalProperties":false}`),
	},
	policy.ToolComposeReport: {
		Name: policy.ToolComposeReport,
		Description: "Finish the run with a report. Every claim cites the evidence it rests on as " +
			`{"source":"artifact","correlationId":"…"}: the id of a result this run read, or the schema snapshot's id.`,
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"claims":{"type":"array","description":"the findings, at least one","items":{"type":"object","properties":{` +
			`"text":{"type":"string","description":"one finding, with the figures it rests on"},` +
			`"evidence":{"type":"array","description":"what the finding rests on, at least one reference","items":{"type":"object","properties":{` +
			`"source":{"type":"string","enum":["artifact"],"description":"always \"artifact\""},` +
			`"correlationId":{"type":"string","description":"the id a tool result or the schema snapshot gave, e.g. r2"}},` +
			`"required":["source","correlationId"],"additionalProperties":false}}},` +
			`"required":["text","evidence"],"additionalProperties":false}}},` +
			`"required":["claims"],"additionalProperties":false}`),
	},
}

// tool is one entry of the tool table: what the model is told, which
// executor operation the tool needs ("" for none), and what a call does.
// Adding a tool is adding an entry (and its name to a workflow's row).
type tool struct {
	spec contracts.ToolSpec
	// brief is the rules' one-line account of the tool.
	brief string
	op    contracts.ExecOp
	// call handles one call with the model's arguments as sent and the
	// entry's operation; done reports that the run ended.
	call func(d *drive, ctx context.Context, op contracts.ExecOp, tc contracts.ToolCall, raw string) (done bool, err error)
}

// toolTable holds every tool a workflow row may name (a test holds the
// workflow table to it).
var toolTable = map[string]tool{
	policy.ToolInspectSchema: {spec: toolSpecs[policy.ToolInspectSchema], op: contracts.OpSchema,
		brief: "describes tables (the server writes that query)", call: (*drive).callInspectSchema},
	policy.ToolRunReadQuery: {spec: toolSpecs[policy.ToolRunReadQuery], op: contracts.OpRead,
		brief: "runs one SELECT you write", call: (*drive).callRunReadQuery},
	policy.ToolInspectPlan: {spec: toolSpecs[policy.ToolInspectPlan], op: contracts.OpExplain,
		brief: "shows how the database would run a SELECT, without running it", call: (*drive).callInspectPlan},
	policy.ToolComposeReport: {spec: toolSpecs[policy.ToolComposeReport],
		brief: "ends the run with your findings", call: (*drive).callComposeReport},
}

type schemaArgs struct {
	Schema  string `json:"schema,omitempty"`
	Table   string `json:"table,omitempty"`
	Pattern string `json:"pattern,omitempty"`
	After   string `json:"after,omitempty"`
}

// planArgs are inspect_plan's: a statement the executor plans, never runs.
type planArgs struct {
	SQL    string `json:"sql"`
	Reason string `json:"reason,omitempty"`
}

type readArgs struct {
	SQL    string `json:"sql"`
	Reason string `json:"reason,omitempty"`
}

type reportArgs struct {
	Claims []contracts.Claim `json:"claims"`
}

// argError is a tool call whose arguments do not fit the declared schema.
type argError struct{ msg string }

func (e *argError) Error() string { return e.msg }

// stepKey is what reaches the database for a call: the step's identity.
// The model's prose reason and its call id are not part of it, so the same
// statement asked twice is the same step.
func stepKey(tool string, args any) string {
	var b bytes.Buffer
	b.WriteString(tool)
	b.WriteByte(0)
	switch a := args.(type) {
	case readArgs:
		b.WriteString(canonicalSQL(a.SQL))
	case planArgs:
		b.WriteString(canonicalSQL(a.SQL))
	case schemaArgs:
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
	default:
		fmt.Fprint(&b, a)
	}
	sum := sha256.Sum256(b.Bytes())
	return hex.EncodeToString(sum[:10])
}

// canonicalSQL trims what cannot change a statement's effect: surrounding
// whitespace and trailing terminators. Literals are kept exactly.
func canonicalSQL(sql string) string {
	return strings.TrimRight(strings.TrimSpace(sql), "; \t\r\n")
}
