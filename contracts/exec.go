package contracts

// Engine names a database engine; it is a subject token.
type Engine string

// The engines.
const (
	EnginePostgres Engine = "postgres"
	EngineSQLite   Engine = "sqlite"
	EngineDuckDB   Engine = "duckdb"
	EngineMSSQL    Engine = "mssql"
)

// ExecOp names an executor operation; it is a subject token.
type ExecOp string

// The executor operations.
const (
	OpSchema     ExecOp = "schema"
	OpRead       ExecOp = "read"
	OpExplain    ExecOp = "explain"
	OpProfile    ExecOp = "profile"
	OpOperations ExecOp = "operations"
	// OpInventory reads the structured inventory (contracts.Inventory) of
	// the connection's readable relations; the reply's artifact stores it.
	OpInventory ExecOp = "inventory"
	// OpCheck reads a statement with the guard and answers what it found
	// (contracts.StatementCheck); nothing reaches the database.
	OpCheck ExecOp = "check"
)

// Profile names the execution profile a statement runs under.
type Profile string

// The execution profiles.
const (
	ProfileAgentReadOnly   Profile = "agent-read-only"
	ProfileAgentHandover   Profile = "agent-handover"
	ProfileAgentOperations Profile = "agent-operations"
	ProfileInspect         Profile = "inspect"
)

// ExecRequest asks an executor for one operation. Executors serve it with
// core request/reply: at most once.
type ExecRequest struct {
	RunID        string  `json:"runId,omitempty"`
	StepID       string  `json:"stepId,omitempty"`
	ConnectionID string  `json:"connectionId"`
	Profile      Profile `json:"profile"`
	// CorrelationID names the artifact the result is stored under.
	CorrelationID string `json:"correlationId,omitempty"`
	// SQL is the statement of a read.
	SQL string `json:"sql,omitempty"`
	// Params are the read's positional parameters (?, ?NNN), bound
	// separately from SQL, never spliced in: null, booleans, numbers and
	// strings.
	Params []any `json:"params,omitempty"`
	// Schema and Table narrow a schema read; the executor writes the SQL.
	Schema string `json:"schema,omitempty"`
	Table  string `json:"table,omitempty"`
	// Pattern narrows a schema or inventory read to relations whose name
	// (or schema.name, when it holds a dot) matches it: '*' any run of
	// characters, '?' one, case-insensitive.
	Pattern string `json:"pattern,omitempty"`
	// After continues a listing past the relation it names (the Next of the
	// previous page).
	After string `json:"after,omitempty"`
	// MaxObjects bounds the relations of an inventory read; zero means
	// DefaultInventoryObjects.
	MaxObjects int `json:"maxObjects,omitempty"`
	// TimeoutMs is the statement timeout the orchestrator granted, already
	// clamped to what is left of the run.
	TimeoutMs int64 `json:"timeoutMs"`
	// FailedFingerprints are the canonical fingerprints of statements that
	// already failed at the database in this run: a read matching one is
	// refused (already_failed) instead of run again.
	FailedFingerprints []string `json:"failedFingerprints,omitempty"`
	// MaxRows and MaxBytes bound the result; zero means the profile's default.
	MaxRows  int `json:"maxRows,omitempty"`
	MaxBytes int `json:"maxBytes,omitempty"`
	// ShowBytes is the model's share of a result in bytes: the text the
	// orchestrator renders of the reply stays within it (pkg/exectext),
	// saying how many rows and bytes it shows, and a schema read pages or
	// describes within it. The whole result is stored and citable. Zero:
	// no bound beyond MaxBytes.
	ShowBytes int `json:"showBytes,omitempty"`
	// Depth and FromColumn shape OpProfile (Table names the table, as the
	// model spelled it; the executor resolves it against its catalog).
	Depth      ProfileDepth `json:"depth,omitempty"`
	FromColumn string       `json:"fromColumn,omitempty"`
	// Kind and Limit shape OpOperations (Schema narrows it); Limit zero
	// means MaxOperationsRows.
	Kind  OperationsKind `json:"kind,omitempty"`
	Limit int            `json:"limit,omitempty"`
	// HypotheticalIndex asks OpExplain to plan SQL as if this CREATE INDEX
	// statement had run, without creating anything (PostgreSQL with hypopg);
	// engines that cannot refuse with RefuseHypotheticalUnavailable.
	HypotheticalIndex string `json:"hypotheticalIndex,omitempty"`
}

// ExecCancel asks the executors of one engine to stop the in-flight
// operation of RunID and StepID, at the database too. Published on
// ExecCancelSubject; nobody replies. A direct query (POST /api/query) has no
// run: RunID is empty and StepID is the request id the gateway gave it.
type ExecCancel struct {
	RunID  string `json:"runId,omitempty"`
	StepID string `json:"stepId"`
}

// ExecStatus is the shape of an executor reply.
type ExecStatus string

// The executor reply statuses.
const (
	ExecOK      ExecStatus = "ok"
	ExecRefused ExecStatus = "refused"
	ExecError   ExecStatus = "error"
)

// ExecReply answers ExecRequest with data, never with text for a model: ok
// (the artifact's summary and what the operation read: rows as cells, a
// plan, a profile, a reading's or a schema page's figures), refused (code,
// reason, fix) or error (classified database error). The orchestrator
// renders what the model reads of it (pkg/exectext), database content fenced.
type ExecReply struct {
	Status   ExecStatus       `json:"status"`
	Artifact *ArtifactSummary `json:"artifact,omitempty"`
	// Cells are the rows of a read, a plan (one row a plan line) or a
	// reading, in the artifact's order, each value written on one line
	// (NULL for null, numbers in their shortest form, a BLOB as its JSON
	// form, control characters escaped). The whole result: how much of it a
	// model is shown is the renderer's cut (ExecRequest.ShowBytes).
	Cells   [][]string `json:"cells,omitempty"`
	Refusal *Refusal   `json:"refusal,omitempty"`
	Error   *DBError   `json:"error,omitempty"`
	// DurationMs is the time the statement spent at the database.
	DurationMs int64 `json:"durationMs"`
	// Statements counts the statements the operation sent (a schema read may send several).
	Statements int `json:"statements"`
	// Fingerprint is the guard's canonical fingerprint of a read's statement:
	// layout, comments and keyword case normalised away, literals kept.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Inventory answers OpInventory (also stored whole in the artifact).
	Inventory *Inventory `json:"inventory,omitempty"`
	// Check answers OpCheck.
	Check *StatementCheck `json:"check,omitempty"`
	// Plan answers OpExplain: the summary of the estimating plan (the plan
	// itself is the artifact's rows).
	Plan *PlanSummary `json:"plan,omitempty"`
	// Profile answers OpProfile (the artifact holds one row per column).
	Profile *TableProfile `json:"profile,omitempty"`
	// Reading answers OpOperations beside its rows (Cells): how the
	// reading was narrowed and bounded.
	Reading *ReadingSummary `json:"reading,omitempty"`
	// Schema answers OpSchema: what the selection matched and the
	// relations this reply describes or lists.
	Schema *SchemaPage `json:"schema,omitempty"`
}

// ReadingSummary says how an operational reading was narrowed and bounded
// and what the engine says about its figures.
type ReadingSummary struct {
	// Narrowed counts the rows left out as another schema's (the request
	// named one).
	Narrowed int `json:"narrowed,omitempty"`
	// Past counts the rows past the request's limit, not returned.
	Past int `json:"past,omitempty"`
	// Hidden counts the rows left out because they name a relation the
	// connection's readable patterns hide; Withheld the statement texts
	// shown as NULL for the same reason.
	Hidden   int `json:"hidden,omitempty"`
	Withheld int `json:"withheld,omitempty"`
	// Notes are the engine's words about its figures.
	Notes []string `json:"notes,omitempty"`
}

// SchemaPage answers a schema read: the relations it describes in full
// (few asked for, within the model's share) or one page of their names.
type SchemaPage struct {
	// Matched counts the readable relations the selection matched.
	Matched int `json:"matched"`
	// Unreadable counts the relations outside the connection's readable
	// patterns, not listed.
	Unreadable int `json:"unreadable,omitempty"`
	// Pattern is the request's pattern as it was read (a LIKE '%' as the
	// glob's '*').
	Pattern string `json:"pattern,omitempty"`
	// Described says Relations are described in full; otherwise they are a
	// page of names (schema, name and kind only) starting at position From
	// (1-based) of the match.
	Described bool       `json:"described,omitempty"`
	Relations []Relation `json:"relations,omitempty"`
	From      int        `json:"from,omitempty"`
}

// DBErrorClass classifies a database error.
type DBErrorClass string

// The database error classes.
const (
	DBSyntax        DBErrorClass = "syntax"
	DBMissingObject DBErrorClass = "missing-object"
	DBPermission    DBErrorClass = "permission"
	DBTimeout       DBErrorClass = "timeout"
	DBCancelled     DBErrorClass = "cancelled"
	DBResource      DBErrorClass = "resource"
	DBUnavailable   DBErrorClass = "unavailable"
	DBOther         DBErrorClass = "other"
)

// DBError is a classified database error. Message is the engine's text; it is
// untrusted and reaches a model only fenced.
type DBError struct {
	Class   DBErrorClass `json:"class"`
	Message string       `json:"message"`
	// ByExecutor marks a failure the executor raised itself (storing the
	// artifact, a malformed reading): Message is its own words, none of the
	// database's.
	ByExecutor bool `json:"byExecutor,omitempty"`
}

func (e *DBError) Error() string { return "database error (" + string(e.Class) + ")" }

// Column describes one result column.
type Column struct {
	Name string `json:"name"`
	Type string `json:"type,omitempty"`
}

// ArtifactSummary describes a stored result without its rows.
type ArtifactSummary struct {
	CorrelationID string   `json:"correlationId"`
	Columns       []Column `json:"columns"`
	Rows          int      `json:"rows"`
	Bytes         int      `json:"bytes"`
	// Truncated is set only under the inspect profile, with what truncated it.
	Truncated   bool     `json:"truncated,omitempty"`
	TruncatedBy []string `json:"truncatedBy,omitempty"`
}

// Artifact is a full stored result, kept in the artifacts object store under
// ArtifactKey(runID, correlationID) with a TTL.
type Artifact struct {
	ArtifactSummary
	RunID        string  `json:"runId,omitempty"`
	StepID       string  `json:"stepId,omitempty"`
	ConnectionID string  `json:"connectionId"`
	Profile      Profile `json:"profile"`
	SQL          string  `json:"sql"`
	// Data holds the rows, each a list of values in column order. A BLOB is
	// {"type":"blob","hex":…,"bytes":N}.
	Data [][]any `json:"data"`
	// Inventory is the structured inventory an OpInventory read stored;
	// Data then lists its relations one per row.
	Inventory *Inventory `json:"inventory,omitempty"`
}

// ArtifactKey is the object name of an artifact. Run-scoped so a caller who
// may read a run may read its artifacts and nothing else.
func ArtifactKey(runID, correlationID string) string {
	if runID == "" {
		runID = "_direct"
	}
	return runID + "/" + correlationID
}

// ConnectionDescriptor is what executors publish about a connection: never a
// password, a DSN or a file path.
type ConnectionDescriptor struct {
	ID          string `json:"id"`
	Engine      Engine `json:"engine"`
	Description string `json:"description,omitempty"`
	// Identity fingerprints engine, host, port, database and role, so two
	// descriptors can be compared without revealing them.
	Identity string `json:"identity"`
	// Policy fingerprints the connection's readable patterns: a captured
	// inventory is reused only under the policy it was read under.
	Policy string `json:"policy,omitempty"`
	// Demo marks the built-in demonstration database.
	Demo bool `json:"demo,omitempty"`
	// Readable lists the table patterns a statement may read (empty: every
	// table) and LargeTables the tables a statement must bound from below,
	// with the column: what the guard holds the connection to, shown to the
	// people who use it.
	Readable    []string          `json:"readable,omitempty"`
	LargeTables map[string]string `json:"largeTables,omitempty"`
	// Status says whether the executor can serve the connection now; empty
	// (from an executor older than this field) means available.
	Status ConnectionStatus `json:"status,omitempty"`
	// Reason says why an unavailable connection is unavailable, in words
	// that name no host, path or credential (the executor's log has the
	// driver's text).
	Reason string `json:"reason,omitempty"`
	// Warnings are what the operator should fix about the connection, e.g.
	// that the role running reads could also write.
	Warnings []string `json:"warnings,omitempty"`
}

// ConnectionStatus is whether an executor can serve a connection now.
type ConnectionStatus string

// The connection statuses.
const (
	// ConnectionAvailable: the database was opened and answers.
	ConnectionAvailable ConnectionStatus = "available"
	// ConnectionUnavailable: the database could not be opened, or stopped
	// answering after it was (a read found it lost); the executor keeps
	// opening it again in the background, with a doubling wait, refuses
	// operations on it (RefuseConnectionUnavailable) meanwhile and publishes
	// it available once it answers.
	ConnectionUnavailable ConnectionStatus = "unavailable"
)
