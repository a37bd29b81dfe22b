package orchestrator

import (
	"bytes"
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

type schemaArgs struct {
	Schema  string `json:"schema,omitempty"`
	Table   string `json:"table,omitempty"`
	Pattern string `json:"pattern,omitempty"`
	After   string `json:"after,omitempty"`
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
