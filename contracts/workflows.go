package contracts

// What the specialist workflows exchange: table profiles
// (database-assessment, data-analysis), operational readings (operations),
// plan comparisons and recommendations (query-optimization) and presented
// answers (data-analysis).

// ProfileDepth is how much a table profile measures.
type ProfileDepth string

// The profile depths; each adds to the one before.
const (
	// DepthBasic: the row count and, per column, how many rows hold a value.
	DepthBasic ProfileDepth = "basic"
	// DepthDistribution adds distinct counts.
	DepthDistribution ProfileDepth = "distribution"
	// DepthPattern adds shape counts for personal data (email-like values,
	// long digit runs), counted inside the database.
	DepthPattern ProfileDepth = "pattern"
)

// ProfileDepths lists the depths in order.
var ProfileDepths = []ProfileDepth{DepthBasic, DepthDistribution, DepthPattern}

// MaxProfileColumns bounds the columns one profile covers; a wider table is
// profiled further with FromColumn.
const MaxProfileColumns = 24

// TableProfile is what OpProfile measured of one table: counts and shapes,
// never a value from the table.
type TableProfile struct {
	// Table is the relation the spelling resolved to, as the catalog names it.
	Table NameRef      `json:"table"`
	Depth ProfileDepth `json:"depth"`
	// Rows is the rows counted (of the sample when Sampled).
	Rows int64 `json:"rows"`
	// Sampled is set when the table is large under the connection's rule
	// and the counts are over its first SampleRows rows only.
	Sampled    bool  `json:"sampled,omitempty"`
	SampleRows int64 `json:"sampleRows,omitempty"`
	// Columns are the columns covered, in the table's order.
	Columns []ColumnProfile `json:"columns"`
	// Uncovered counts the columns past the bound; NextColumn is the
	// fromColumn that profiles them.
	Uncovered  int    `json:"uncovered,omitempty"`
	NextColumn string `json:"nextColumn,omitempty"`
	// Findings are the server's, each a predicate over the counts (or the
	// inventory, for fk_unindexed) with its threshold stated.
	Findings []Finding `json:"findings"`
}

// ColumnProfile is one column's counts.
type ColumnProfile struct {
	Name string `json:"name"`
	Type string `json:"type,omitempty"`
	// Present counts the rows with a value (not NULL).
	Present int64 `json:"present"`
	// Distinct counts distinct values (distribution and pattern depths);
	// nil when not measured, with NoDistinct saying why when the type has
	// no equality (json, xml, geometric types).
	Distinct   *int64 `json:"distinct,omitempty"`
	NoDistinct string `json:"noDistinct,omitempty"`
	// EmailLike and DigitRun count values shaped like an email address and
	// values holding a run of nine or more digits (pattern depth, text
	// columns only).
	EmailLike *int64 `json:"emailLike,omitempty"`
	DigitRun  *int64 `json:"digitRun,omitempty"`
}

// FindingCode names a profile finding.
type FindingCode string

// The profile findings.
const (
	FindingHighNull       FindingCode = "high_null"
	FindingConstant       FindingCode = "constant"
	FindingLowCardinality FindingCode = "low_cardinality"
	FindingSuspectedPII   FindingCode = "suspected_pii"
	FindingFKUnindexed    FindingCode = "fk_unindexed"
)

// Finding is one mechanical finding of a profile.
type Finding struct {
	Code   FindingCode `json:"code"`
	Column string      `json:"column,omitempty"`
	// Detail states the figures and the threshold, in the server's words.
	Detail string `json:"detail"`
}

// OperationsKind names an operational reading.
type OperationsKind string

// The operational readings.
const (
	OpsSessions    OperationsKind = "sessions"
	OpsSlowQueries OperationsKind = "slow-queries"
	OpsTableStats  OperationsKind = "table-stats"
	OpsIndexStats  OperationsKind = "index-stats"
	OpsStorage     OperationsKind = "storage"
	OpsHealth      OperationsKind = "health"
)

// OperationsKinds lists the kinds in a stable order.
var OperationsKinds = []OperationsKind{OpsSessions, OpsSlowQueries, OpsTableStats, OpsIndexStats, OpsStorage, OpsHealth}

// OperationsColumns declares the columns of each kind's reading, the same
// on every engine (a figure an engine cannot give is null), so an empty
// reading still says what it would have held.
var OperationsColumns = map[OperationsKind][]Column{
	OpsSessions: {{Name: "session", Type: "text"}, {Name: "user", Type: "text"}, {Name: "state", Type: "text"},
		{Name: "query", Type: "text"}, {Name: "running_ms", Type: "integer"}, {Name: "waiting_on", Type: "text"},
		{Name: "blocked_by", Type: "text"}},
	OpsSlowQueries: {{Name: "query", Type: "text"}, {Name: "calls", Type: "integer"}, {Name: "total_ms", Type: "real"},
		{Name: "mean_ms", Type: "real"}, {Name: "rows", Type: "integer"}},
	OpsTableStats: {{Name: "schema", Type: "text"}, {Name: "table", Type: "text"}, {Name: "rows", Type: "integer"},
		{Name: "bytes", Type: "integer"}, {Name: "dead_rows", Type: "integer"}, {Name: "seq_scans", Type: "integer"},
		{Name: "index_scans", Type: "integer"}, {Name: "last_analyzed", Type: "text"}},
	OpsIndexStats: {{Name: "schema", Type: "text"}, {Name: "table", Type: "text"}, {Name: "index", Type: "text"},
		{Name: "unique", Type: "boolean"}, {Name: "bytes", Type: "integer"}, {Name: "scans", Type: "integer"}},
	OpsStorage: {{Name: "object", Type: "text"}, {Name: "kind", Type: "text"}, {Name: "bytes", Type: "integer"},
		{Name: "detail", Type: "text"}},
	OpsHealth: {{Name: "check", Type: "text"}, {Name: "value", Type: "text"}, {Name: "detail", Type: "text"}},
}

// MaxOperationsRows bounds a reading's rows when the request asks for no
// smaller limit.
const MaxOperationsRows = 100

// Presentation is how an answer is shown: a table, or a chart over the
// result's columns.
type Presentation struct {
	// Kind is "table" or "chart".
	Kind  string     `json:"kind"`
	Chart *ChartSpec `json:"spec,omitempty"`
}

// The presentation kinds.
const (
	PresentTable = "table"
	PresentChart = "chart"
)

// ChartSpec specifies a chart, never a picture: which result columns go
// where, checked against the live rows before it is recorded.
type ChartSpec struct {
	// Type is one of ChartTypes.
	Type string `json:"type"`
	// X names the category (or numeric, for scatter) column; Y the value
	// columns, one series each.
	X string   `json:"x"`
	Y []string `json:"y"`
	// Caption is the model's own words, shown quoted.
	Caption string `json:"caption"`
}

// ChartTypes lists the chart types a spec may name.
var ChartTypes = []string{"bar", "line", "area", "pie", "scatter", "stacked-bar"}

// ChartDecision is the server's one decision about how a chart is drawn
// over the answer's rows, recorded with the answer (pkg/chart decides it):
// the console and the CLI draw what it says and apply no rule of their own.
type ChartDecision struct {
	// Rule names the decision's version.
	Rule string `json:"rule"`
	// Series are the y columns drawn, one series each, in the spec's order.
	Series []string `json:"series"`
	// Rows is how many rows of the result the decision read.
	Rows int `json:"rows"`
	// Dropped are the points not drawn, each with why; a point of a
	// scatter whose x is not a number drops the row (Column is then X).
	Dropped []ChartDrop `json:"dropped,omitempty"`
}

// ChartDrop is one point a chart does not draw.
type ChartDrop struct {
	// Row is the point's row, counted from 0 in the result's order.
	Row int `json:"row"`
	// Column is the column whose value cannot be drawn.
	Column string `json:"column"`
	// Why is ChartDropNull or ChartDropNotANumber.
	Why ChartDropReason `json:"why"`
}

// ChartDropReason says why a point is not drawn.
type ChartDropReason string

// The reasons a point is not drawn.
const (
	// ChartDropNull: the value is NULL.
	ChartDropNull ChartDropReason = "null"
	// ChartDropNotANumber: the value is not a finite number written in
	// decimal (text, a boolean, NaN, an infinity, a hexadecimal float).
	ChartDropNotANumber ChartDropReason = "not_a_number"
)

// Handover says what happens to a presented answer in the user's editor.
type Handover string

// The handover outcomes.
const (
	// HandoverNone: the run was not opened with autoExecute.
	HandoverNone Handover = "none"
	// HandoverApplied: the statement is offered to the editor, not run; the
	// gate declined (HandoverWarning says why).
	HandoverApplied Handover = "applied"
	// HandoverAutoExecuted: the gate passed; POST …/handover replays it.
	HandoverAutoExecuted Handover = "auto-executed"
)
