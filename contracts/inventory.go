package contracts

// RelationKind is the one vocabulary every engine's catalog word is mapped
// to. The engine's own word travels beside it (Relation.EngineKind).
type RelationKind string

// The relation kinds.
const (
	RelationTable            RelationKind = "table"
	RelationPartitionedTable RelationKind = "partitioned table"
	RelationView             RelationKind = "view"
	RelationMaterializedView RelationKind = "materialized view"
	RelationForeignTable     RelationKind = "foreign table"
	RelationVirtualTable     RelationKind = "virtual table"
)

// DefaultInventoryObjects bounds an inventory capture: relations past it are
// counted (Inventory.Total) and the capture says it was truncated.
const DefaultInventoryObjects = 5000

// Inventory is the structured reading of a connection's relations: what a
// run is grounded in and what inspect_schema pages through. Only relations
// the connection's readable patterns allow are described; the others are
// counted in Unreadable and never named.
type Inventory struct {
	Engine Engine `json:"engine"`
	// Relations are described in (schema, name) order.
	Relations []Relation `json:"relations"`
	// Total counts the readable relations that matched the request; it is
	// more than len(Relations) when the listing was truncated.
	Total int `json:"total"`
	// Truncated is set when a bound stopped the listing; Next then continues
	// it (pass it back as ExecRequest.After).
	Truncated bool   `json:"truncated,omitempty"`
	Next      string `json:"next,omitempty"`
	// Unreadable counts relations left out because no readable pattern
	// names them.
	Unreadable int `json:"unreadable,omitempty"`
	// Limit is the bound on relations that applied.
	Limit int `json:"limit"`
	// StatisticsSource names where the estimates came from, e.g.
	// "pg_class.reltuples and pg_stats"; empty when the engine keeps none.
	StatisticsSource string `json:"statisticsSource,omitempty"`
}

// Relation is one table-like object: a table, view, materialized view,
// foreign or virtual table.
type Relation struct {
	Schema string       `json:"schema"`
	Name   string       `json:"name"`
	Kind   RelationKind `json:"kind"`
	// EngineKind is the engine's own word for it (pg_class.relkind "r",
	// sqlite_schema.type "table", …).
	EngineKind  string           `json:"engineKind,omitempty"`
	Columns     []RelationColumn `json:"columns"`
	PrimaryKey  []string         `json:"primaryKey,omitempty"`
	Unique      [][]string       `json:"unique,omitempty"`
	ForeignKeys []ForeignKey     `json:"foreignKeys,omitempty"`
	Indexes     []Index          `json:"indexes,omitempty"`
	// Stats are the engine's estimates; nil means the engine holds none for
	// this relation (never analysed), which is said, never guessed.
	Stats *RelationStats `json:"stats,omitempty"`
	// Definition is the relation's definition as the engine stores it,
	// comments included (SQLite keeps the CREATE statement as written), read
	// only when a few relations are described in full; empty otherwise.
	Definition string `json:"definition,omitempty"`
}

// QualifiedName is schema.name as stored (no quoting, no folding).
func (r Relation) QualifiedName() string { return r.Schema + "." + r.Name }

// RelationColumn is one column of a relation, in the relation's order.
type RelationColumn struct {
	Name string `json:"name"`
	// Type is the declared type as the engine writes it ("" where SQLite
	// declares none).
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
}

// ForeignKey is a foreign key of a relation.
type ForeignKey struct {
	Name       string   `json:"name,omitempty"`
	Columns    []string `json:"columns"`
	RefSchema  string   `json:"refSchema"`
	RefName    string   `json:"refName"`
	RefColumns []string `json:"refColumns"`
}

// Index is an index of a relation. Expression columns are written as the
// engine writes the expression.
type Index struct {
	Name    string   `json:"name"`
	Unique  bool     `json:"unique,omitempty"`
	Columns []string `json:"columns"`
}

// RelationStats are the engine's estimates about a relation, never a value
// from it.
type RelationStats struct {
	// Rows is the estimated row count.
	Rows float64 `json:"rows"`
	// Columns holds per-column estimates, by column name, where the engine
	// keeps them.
	Columns map[string]ColumnStats `json:"columns,omitempty"`
}

// ColumnStats are estimates about one column.
type ColumnStats struct {
	// NullFraction is the estimated fraction of rows where the column is null.
	NullFraction *float64 `json:"nullFraction,omitempty"`
	// Distinct is the estimated number of distinct values (PostgreSQL's
	// negative n_distinct already converted to a count).
	Distinct *float64 `json:"distinct,omitempty"`
}

// StatementCheck is what the guard reads in a statement without running it:
// whether it would be admitted as a read (or the refusal it would get) and
// the relations and columns it names, resolved as the engine resolves names.
type StatementCheck struct {
	ReadOnly bool     `json:"readOnly"`
	Refusal  *Refusal `json:"refusal,omitempty"`
	// Relations are the relations the statement reads, schema filled in.
	Relations []NameRef `json:"relations,omitempty"`
	// Columns are the columns the statement names that could be tied to one
	// of Relations; a column that could not be tied to one is left out
	// rather than guessed.
	Columns []ColumnRef `json:"columns,omitempty"`
	// ColumnsRead says whether this engine's reader reports columns at all.
	ColumnsRead bool `json:"columnsRead"`
	// FoldCase says names compare case-insensitively on this engine.
	FoldCase bool `json:"foldCase"`
}

// NameRef is a relation named by a statement.
type NameRef struct {
	Schema string `json:"schema"`
	Name   string `json:"name"`
	// System marks one of the engine's own catalogs, which no inventory lists.
	System bool `json:"system,omitempty"`
}

// ColumnRef is a column named by a statement, with the relation it belongs to.
type ColumnRef struct {
	Relation NameRef `json:"relation"`
	Column   string  `json:"column"`
}

// PlanSummary is what an engine's estimating plan of a statement says, read
// by the executor: how each relation is accessed and what the engine
// estimates. The plan comes from EXPLAIN without ANALYZE (or the engine's
// equivalent): the statement is never executed.
type PlanSummary struct {
	Engine Engine `json:"engine"`
	// Access is how the plan reads each relation, in plan order.
	Access []RelationAccess `json:"access"`
	// Cost is the engine's estimated total cost of the plan, in the
	// engine's own units; nil when the engine gives none.
	Cost *float64 `json:"cost,omitempty"`
	// Rows is the engine's estimate of the rows the statement returns; nil
	// when the engine gives none.
	Rows *float64 `json:"rows,omitempty"`
	// Uninterpreted lists plan steps the summary did not interpret, as the
	// engine named them: the plan text has them, the summary does not.
	Uninterpreted []string `json:"uninterpreted,omitempty"`
	// Note says what this engine's plans cannot tell (SQLite estimates no
	// costs or rows).
	Note string `json:"note,omitempty"`
	// HypotheticalIndex is the CREATE INDEX statement the plan was made as
	// if it had run (nothing was created); empty for a plan of the database
	// as it is.
	HypotheticalIndex string `json:"hypotheticalIndex,omitempty"`
}

// RelationAccess is how a plan reads one relation.
type RelationAccess struct {
	// Relation is the relation as the plan names it.
	Relation string `json:"relation"`
	// Access is full scan, index, mixed (both, in different steps) or
	// unknown.
	Access AccessKind `json:"access"`
	// Index names the index used, when the plan says.
	Index string `json:"index,omitempty"`
	// Rows is the engine's estimate of the rows read from it; nil when the
	// engine gives none.
	Rows *float64 `json:"rows,omitempty"`
}

// AccessKind is how a plan reads a relation.
type AccessKind string

// The access kinds.
const (
	AccessFullScan AccessKind = "full scan"
	AccessIndex    AccessKind = "index"
	AccessMixed    AccessKind = "mixed"
	AccessUnknown  AccessKind = "unknown"
)
