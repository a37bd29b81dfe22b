package api

import (
	"net/url"

	"github.com/sondehq/sonde/contracts"
)

// PathExplain asks for the estimating plan of one statement under the
// inspect profile: guarded exactly like a read, never executed.
const PathExplain = "/api/explain"

// TablesPageSize is the most relations one page of
// GET /api/connections/{id}/tables lists; Next continues it.
const TablesPageSize = 200

// Error codes of the catalog routes.
const (
	// CodeTableNotFound: no readable relation of the connection has that
	// name (a relation the readable patterns hide is never named).
	CodeTableNotFound = contracts.CodeTableNotFound
	// CodeAmbiguousTable: the name matches relations in several schemas.
	CodeAmbiguousTable = contracts.CodeAmbiguousTable
)

// TablesPath is the path of the readable relations of connection connID.
func TablesPath(connID string) string {
	return PathConnections + "/" + url.PathEscape(connID) + "/tables"
}

// TablePath is the path of one relation of connection connID, named as
// name or schema.name.
func TablePath(connID, table string) string {
	return TablesPath(connID) + "/" + url.PathEscape(table)
}

// TablesResponse answers GET /api/connections/{id}/tables: one page of the
// connection's readable relations, in (schema, name) order.
type TablesResponse struct {
	ConnectionID string       `json:"connectionId"`
	Tables       []TableEntry `json:"tables"`
	// Total counts the readable relations that match the pattern, on every
	// page.
	Total int `json:"total"`
	// Unreadable counts the relations outside the connection's readable
	// patterns: counted, never named.
	Unreadable int `json:"unreadable"`
	// Next, when set, continues the listing: pass it back as after.
	Next      string `json:"next,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

// TableEntry is one relation of a listing.
type TableEntry struct {
	Schema string `json:"schema"`
	Name   string `json:"name"`
	// Kind is contracts.RelationKind: "table", "view", "materialized view", ….
	Kind string `json:"kind"`
	// Rows is the engine's row estimate; absent when it keeps none.
	Rows *float64 `json:"rows,omitempty"`
}

// DescribeResponse answers GET /api/connections/{id}/tables/{table}.
type DescribeResponse struct {
	ConnectionID string             `json:"connectionId"`
	Relation     contracts.Relation `json:"relation"`
}

// ExplainRequest is the body of POST /api/explain (connectionId checked
// with contracts.CheckID, as every field tagged id:"<kind>").
type ExplainRequest struct {
	ConnectionID string `json:"connectionId" id:"connection"`
	SQL          string `json:"sql"`
}

// ExplainResponse answers POST /api/explain: the plan's summary, and the
// plan itself as the engine printed it, one row per step.
type ExplainResponse struct {
	ConnectionID string                `json:"connectionId"`
	SQL          string                `json:"sql"`
	Plan         contracts.PlanSummary `json:"plan"`
	Columns      []contracts.Column    `json:"columns"`
	Rows         [][]any               `json:"rows"`
}
