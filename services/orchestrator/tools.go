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
			`"reason":{"type":["string","null"],"description":"what the plan should show, in one sentence"},` +
			`"hypotheticalIndex":{"type":["string","null"],"description":"a CREATE INDEX statement to plan as if it existed; nothing is created (PostgreSQL with hypopg only; refused elsewhere); null for the database as it is"}},` +
			`"required":["sql","reason","hypotheticalIndex"],"additionalProperties":false}`),
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
	policy.ToolComparePlans: {
		Name: policy.ToolComparePlans,
		Description: "Compare two estimating plans this run read with inspect_plan (before and after a rewrite, or without and with a hypothetical index). " +
			"Name the two plan results by their ids; the server reads the statements and the plans from the run's record and says what changed. Runs nothing.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"before":{"type":"string","description":"the id of the plan result of the statement as it is, e.g. r2"},` +
			`"after":{"type":"string","description":"the id of the plan result of the rewrite or of the plan with the hypothetical index, e.g. r4"}},` +
			`"required":["before","after"],"additionalProperties":false}`),
	},
	policy.ToolRecommendChange: {
		Name: policy.ToolRecommendChange,
		Description: "Record one change for the user to review and apply: an index (a CREATE INDEX statement) or a rewrite of their statement. " +
			"It is recorded, never executed. Cite the evidence it rests on; an index recommendation cites the plan result that shows the scan it removes.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"kind":{"type":"string","enum":["index","rewrite"],"description":"index: a CREATE INDEX statement; rewrite: the rewritten SELECT"},` +
			`"statement":{"type":"string","description":"the statement the user would apply or run"},` +
			`"rationale":{"type":"string","description":"why it helps, with the figures from the cited results"},` +
			`"evidence":{"type":"array","description":"what it rests on, at least one reference","items":{"type":"object","properties":{` +
			`"source":{"type":"string","enum":["artifact"],"description":"always \"artifact\""},` +
			`"correlationId":{"type":"string","description":"the id a tool result gave, e.g. r2"}},` +
			`"required":["source","correlationId"],"additionalProperties":false}}},` +
			`"required":["kind","statement","rationale","evidence"],"additionalProperties":false}`),
	},
	policy.ToolProfileTable: {
		Name: policy.ToolProfileTable,
		Description: "Profile one table: the server writes the statement and counts rows, values present per column and, deeper, distinct values " +
			"and personal-data shapes. Counts only: no value from the table is ever read. Findings (high_null, constant, low_cardinality, suspected_pii, fk_unindexed) " +
			`are the server's. The result names an artifact you can cite as {"source":"artifact","correlationId":"…"}.`,
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"table":{"type":"string","description":"the table, as the schema names it; qualify it with its schema when two schemas hold the name"},` +
			`"depth":{"type":["string","null"],"enum":["basic","distribution","pattern",null],"description":"basic: rows and values present; distribution: adds distinct counts; pattern: adds email and long-digit shapes; null for basic"},` +
			`"fromColumn":{"type":["string","null"],"description":"for a wide table, the column to continue from, as the previous profile said; null to start at the first"}},` +
			`"required":["table","depth","fromColumn"],"additionalProperties":false}`),
	},
	policy.ToolInspectOperations: {
		Name: policy.ToolInspectOperations,
		Description: "Take one operational reading of the database server; the server writes the statement. A moment, not a history: it says what the engine reported as it was taken. " +
			"A kind this engine cannot give is refused. " + `The result names an artifact you can cite as {"source":"artifact","correlationId":"…"}.`,
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"kind":{"type":"string","enum":["sessions","slow-queries","table-stats","index-stats","storage","health"],"description":"sessions: who is connected, running what, blocked by whom; slow-queries: the costliest statements; table-stats: rows, sizes, scans; index-stats: sizes and scans (an unused index shows 0); storage: space; health: one row per figure"},` +
			`"schema":{"type":["string","null"],"description":"only relations of this schema; null for all"},` +
			`"limit":{"type":["integer","null"],"description":"at most this many rows (100 at most); null for the default"}},` +
			`"required":["kind","schema","limit"],"additionalProperties":false}`),
	},
	policy.ToolPresentAnswer: {
		Name: policy.ToolPresentAnswer,
		Description: "Say which result of this run IS the answer and how to show it: as a table, or as a chart checked against its rows. Once per run; only a run_read_query result may be presented. " +
			`A chart is not a claim: afterwards call compose_report with at least one claim citing the presented result as {"source":"artifact","correlationId":"…"}.`,
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"artifact":{"type":"string","description":"the id of the run_read_query result that is the answer, e.g. r3"},` +
			`"presentation":{"type":"object","description":"how to show it","properties":{` +
			`"kind":{"type":"string","enum":["table","chart"],"description":"table for any result (a single number, one row, no numeric column); chart for two or more rows with numeric columns"},` +
			`"spec":{"type":["object","null"],"description":"the chart, for kind chart; null for a table","properties":{` +
			`"type":{"type":"string","enum":["bar","line","area","pie","scatter","stacked-bar"],"description":"the chart type; pie takes one y column, scatter a numeric x"},` +
			`"x":{"type":"string","description":"the result column along the x axis (the category or period)"},` +
			`"y":{"type":"array","items":{"type":"string","description":"a numeric result column"},"description":"the numeric result columns, one series each"},` +
			`"caption":{"type":"string","description":"one sentence saying what the chart shows"}},` +
			`"required":["type","x","y","caption"],"additionalProperties":false}},` +
			`"required":["kind","spec"],"additionalProperties":false}},` +
			`"required":["artifact","presentation"],"additionalProperties":false}`),
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
	policy.ToolComparePlans: {spec: toolSpecs[policy.ToolComparePlans],
		brief: "compares two plans this run read (runs nothing)", call: (*drive).callComparePlans},
	policy.ToolRecommendChange: {spec: toolSpecs[policy.ToolRecommendChange],
		brief: "records an index or a rewrite for the user (never executed)", call: (*drive).callRecommendChange},
	policy.ToolProfileTable: {spec: toolSpecs[policy.ToolProfileTable], op: contracts.OpProfile,
		brief: "counts a table's rows, present and distinct values (the server writes that query; no value is read)", call: (*drive).callProfileTable},
	policy.ToolInspectOperations: {spec: toolSpecs[policy.ToolInspectOperations], op: contracts.OpOperations,
		brief: "takes one reading of the server: sessions, slow queries, table and index statistics, storage, health (the server writes that query)", call: (*drive).callInspectOperations},
	policy.ToolPresentAnswer: {spec: toolSpecs[policy.ToolPresentAnswer],
		brief: "names the result that is the answer and how to show it (once)", call: (*drive).callPresentAnswer},
}

type schemaArgs struct {
	Schema  string `json:"schema,omitempty"`
	Table   string `json:"table,omitempty"`
	Pattern string `json:"pattern,omitempty"`
	After   string `json:"after,omitempty"`
}

// planArgs are inspect_plan's: a statement the executor plans, never runs,
// as the database is or as if a hypothetical index existed.
type planArgs struct {
	SQL          string `json:"sql"`
	Reason       string `json:"reason,omitempty"`
	Hypothetical string `json:"hypotheticalIndex,omitempty"`
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
		if a.Hypothetical != "" {
			// Appended only when set: a plain plan keeps its id.
			b.WriteByte(0)
			b.WriteString(canonicalSQL(a.Hypothetical))
		}
	case profileArgs:
		fmt.Fprintf(&b, "%s\x00%s\x00%s", a.Table, a.Depth, a.FromColumn)
	case operationsArgs:
		fmt.Fprintf(&b, "%s\x00%s\x00%d", a.Kind, a.Schema, a.Limit)
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
