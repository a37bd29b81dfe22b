package api

import (
	"github.com/sondehq/sonde/contracts"
)

// PathQuery is the direct-inspection read: one guarded SELECT under the
// inspect profile, no model involved.
const PathQuery = "/api/query"

// QueryRequest is the body of POST /api/query. Fields tagged id:"<kind>"
// are checked with contracts.CheckID before the handler runs.
type QueryRequest struct {
	ConnectionID string `json:"connectionId" id:"connection"`
	SQL          string `json:"sql"`
	// Limit bounds the rows returned: 1 to 1,000, 200 when zero.
	Limit int `json:"limit,omitempty"`
	// TimeoutMs bounds the statement: 1 to 10,000 ms, 5,000 when zero.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
	// Params are bound to the statement's ?, ?NNN placeholders, never
	// spliced into it: null, booleans, numbers and strings.
	Params []any `json:"params,omitempty"`
}

// QueryResponse answers POST /api/query, and is what sonde query --json and
// sonde sqlite --json print.
type QueryResponse struct {
	Columns []contracts.Column `json:"columns"`
	// Rows hold each row's values in column order; a BLOB is
	// {"type":"blob","hex":…,"bytes":N}.
	Rows     [][]any `json:"rows"`
	RowCount int     `json:"rowCount"`
	// Truncated says rows were left out; TruncatedBy says why: "rows" (the
	// limit) or "answer_characters" (the 1 MB answer bound).
	Truncated   bool     `json:"truncated"`
	TruncatedBy []string `json:"truncatedBy,omitempty"`
	DurationMs  int64    `json:"durationMs"`
}

// Bounds of a direct-inspection read (the inspect profile).
const (
	QueryMaxLimit     = 1000
	QueryMaxTimeoutMs = 10000
)

// CodeExecutorUnanswered: the executor received the statement and did not
// answer within the statement's timeout and the gateway's grace (504): the
// statement may have run, and may still be running (the gateway sends the
// executor a cancel). A statement the database stopped at its timeout is
// db_timeout instead: it ran and was stopped. A read no executor received
// is 503 unavailable: it did not run. Declared in contracts.
const CodeExecutorUnanswered = contracts.CodeExecutorUnanswered
