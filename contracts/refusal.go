package contracts

// Refusal codes: one vocabulary for every engine. Each refusal carries the
// code, what was refused and why, and how to write the query instead.
const (
	// RefuseEmpty: nothing to run (blank, or only comments and semicolons).
	RefuseEmpty = "empty"
	// RefuseUnparsable: the engine's dialect cannot read the statement.
	RefuseUnparsable = "unparsable"
	// RefuseNotOneStatement: more than one statement.
	RefuseNotOneStatement = "not_one_statement"
	// RefuseNotASelect: INSERT, UPDATE, DDL, SET, PRAGMA, EXPLAIN and the like.
	RefuseNotASelect = "not_a_select"
	// RefuseNotReadOnly: a SELECT holding something that writes, locks or
	// runs a command (a writable CTE, SELECT … INTO, FOR UPDATE).
	RefuseNotReadOnly = "not_read_only"
	// RefuseQuerySettings: the statement carries settings or an output format.
	RefuseQuerySettings = "query_settings"
	// RefuseFunctionDenied: a function outside the engine's allowlist.
	RefuseFunctionDenied = "function_denied"
	// RefuseTableFunction: a table function the engine does not allow here.
	RefuseTableFunction = "table_function"
	// RefuseTableNotReadable: a table outside the connection's readable
	// patterns, or in another catalog.
	RefuseTableNotReadable = "table_not_readable"
	// RefuseLargeTableUnbounded: a large table read without a lower bound on
	// its bound column in the query that reads it.
	RefuseLargeTableUnbounded = "large_table_unbounded"
	// RefuseUnsupported: a shape the guard cannot follow.
	RefuseUnsupported = "unsupported"
	// RefuseEngineParse: the engine's own parser reads the statement
	// differently from the guard.
	RefuseEngineParse = "engine_parse"
	// RefuseTooComplex: the statement is longer, more deeply nested or holds
	// more operators than the guard reads before any native parser sees it,
	// or it asks for work the engine cannot interrupt at its deadline (a
	// pattern search, regular expression or edit distance over values the
	// statement builds).
	RefuseTooComplex = "too_complex"

	// RefuseResultTooLarge: the result exceeds the profile's rows or bytes
	// (agent profiles refuse rather than truncate).
	RefuseResultTooLarge = "result_too_large"
	// RefuseUnknownConnection: the request names no connection this
	// executor serves.
	RefuseUnknownConnection = "unknown_connection"
	// RefuseBadRequest: the request itself is malformed.
	RefuseBadRequest = "bad_request"
	// RefuseAlreadyFailed: the statement, read canonically, already failed
	// at the database in this run; it is not run again.
	RefuseAlreadyFailed = "already_failed"
	// RefuseExecutorBusy: every slot of the executor stayed taken for the
	// bounded wait; nothing reached the database, and the same request may
	// be retried shortly. Not a database failure.
	RefuseExecutorBusy = "executor_busy"
	// RefuseConnectionUnavailable: the connection's database does not
	// answer — the executor could not open it, or lost it during this
	// operation (a server that stopped or cannot be reached, a file removed
	// or replaced) — and is opening it again in the background; the
	// connection's descriptor says unavailable meanwhile. It is a state of
	// the connection, not a failure of the statement: the caller does not
	// charge it to the statement (no statement, no repair) and may send the
	// same request once the descriptor says available again. The reason
	// names no host, port, role, database or file (the executor's log has
	// the driver's text). ExecReply.ConnectionUnavailable recognises it.
	RefuseConnectionUnavailable = "connection_unavailable"
)

// ConnectionUnavailable reports whether r says the connection's database
// does not answer (RefuseConnectionUnavailable): a state of the connection
// that costs the step neither a statement nor a repair.
func (r ExecReply) ConnectionUnavailable() bool {
	return r.Status == ExecRefused && r.Refusal != nil && r.Refusal.Code == RefuseConnectionUnavailable
}

// GuardRefusalCodes lists the guard's vocabulary in a stable order.
var GuardRefusalCodes = []string{
	RefuseEmpty, RefuseUnparsable, RefuseNotOneStatement, RefuseNotASelect, RefuseNotReadOnly,
	RefuseQuerySettings, RefuseFunctionDenied, RefuseTableFunction, RefuseTableNotReadable,
	RefuseLargeTableUnbounded, RefuseUnsupported, RefuseEngineParse, RefuseTooComplex,
}

// RefusalRan reports whether a refusal came after the database ran the
// operation (its result was refused for its size): such a step costs its
// statement, where every other refusal gives it back.
func RefusalRan(code string) bool {
	return code == RefuseResultTooLarge || code == RefuseReadingOverBudget
}
