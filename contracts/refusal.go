package contracts

// Refusal codes: one vocabulary for every engine. Each refusal carries the
// code, what was refused and why, and how to write the query instead.
const (
	// RefuseEmpty: nothing to run (blank, or only comments and semicolons).
	RefuseEmpty Code = "empty"
	// RefuseUnparsable: the engine's dialect cannot read the statement.
	RefuseUnparsable Code = "unparsable"
	// RefuseNotOneStatement: more than one statement.
	RefuseNotOneStatement Code = "not_one_statement"
	// RefuseNotASelect: INSERT, UPDATE, DDL, SET, PRAGMA, EXPLAIN and the like.
	RefuseNotASelect Code = "not_a_select"
	// RefuseNotReadOnly: a SELECT holding something that writes, locks or
	// runs a command (a writable CTE, SELECT … INTO, FOR UPDATE).
	RefuseNotReadOnly Code = "not_read_only"
	// RefuseQuerySettings: the statement carries settings or an output format.
	RefuseQuerySettings Code = "query_settings"
	// RefuseFunctionDenied: a function outside the engine's allowlist.
	RefuseFunctionDenied Code = "function_denied"
	// RefuseTableFunction: a table function the engine does not allow here.
	RefuseTableFunction Code = "table_function"
	// RefuseTableNotReadable: a table outside the connection's readable
	// patterns, or in another catalog.
	RefuseTableNotReadable Code = "table_not_readable"
	// RefuseLargeTableUnbounded: a large table read without a lower bound on
	// its bound column in the query that reads it.
	RefuseLargeTableUnbounded Code = "large_table_unbounded"
	// RefuseUnsupported: a shape the guard cannot follow.
	RefuseUnsupported Code = "unsupported"
	// RefuseEngineParse: the engine's own parser reads the statement
	// differently from the guard.
	RefuseEngineParse Code = "engine_parse"
	// RefuseTooComplex: the statement is longer, more deeply nested or holds
	// more operators than the guard reads before any native parser sees it,
	// or it asks for work the engine cannot interrupt at its deadline (a
	// pattern search, regular expression or edit distance over values the
	// statement builds).
	RefuseTooComplex Code = "too_complex"

	// RefuseResultTooLarge: the result exceeds the profile's rows or bytes
	// (agent profiles refuse rather than truncate).
	RefuseResultTooLarge Code = "result_too_large"
	// RefuseUnknownConnection: the request names no connection this
	// executor serves.
	RefuseUnknownConnection = CodeUnknownConnection
	// RefuseBadRequest: the request itself is malformed.
	RefuseBadRequest = CodeBadRequest
	// RefuseAlreadyFailed: the statement, read canonically, already failed
	// at the database in this run; it is not run again.
	RefuseAlreadyFailed Code = "already_failed"
	// RefuseExecutorBusy: every slot of the executor stayed taken for the
	// bounded wait; nothing reached the database, and the same request may
	// be retried shortly. Not a database failure.
	RefuseExecutorBusy Code = "executor_busy"
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
	RefuseConnectionUnavailable Code = "connection_unavailable"
)

// ConnectionUnavailable reports whether r says the connection's database
// does not answer (RefuseConnectionUnavailable): a state of the connection
// that costs the step neither a statement nor a repair.
func (r ExecReply) ConnectionUnavailable() bool {
	return r.Status == ExecRefused && r.Refusal != nil && r.Refusal.Code == RefuseConnectionUnavailable
}

// GuardRefusalCodes lists the guard's vocabulary in a stable order.
var GuardRefusalCodes = []Code{
	RefuseEmpty, RefuseUnparsable, RefuseNotOneStatement, RefuseNotASelect, RefuseNotReadOnly,
	RefuseQuerySettings, RefuseFunctionDenied, RefuseTableFunction, RefuseTableNotReadable,
	RefuseLargeTableUnbounded, RefuseUnsupported, RefuseEngineParse, RefuseTooComplex,
}

// RefusalRan reports whether a refusal came after the database ran the
// operation (its result was refused for its size): such a step costs its
// statement, where every other refusal gives it back.
func RefusalRan(code Code) bool {
	return code == RefuseResultTooLarge || code == RefuseReadingOverBudget
}

// Refusal codes of the specialist tools (executor and run loop).
const (
	// RefuseTableNotInventoried: profile_table named a table the catalog
	// does not hold (or the readable patterns hide).
	RefuseTableNotInventoried Code = "table_not_inventoried"
	// RefuseTableSpellingAmbiguous: the spelling matches several tables
	// equally well; the refusal names them.
	RefuseTableSpellingAmbiguous Code = "table_spelling_ambiguous"
	// RefuseObjectNotProfilable: the name is a sequence, a macro or another
	// object that holds no rows to profile.
	RefuseObjectNotProfilable Code = "object_not_profilable"
	// RefuseColumnNotInTable: fromColumn names no column of the table.
	RefuseColumnNotInTable Code = "column_not_in_table"
	// RefuseKindUnsupported: the engine cannot give this operational reading.
	RefuseKindUnsupported Code = "kind_unsupported"
	// RefuseReadingOverBudget: the reading passed the result bounds; it is
	// refused rather than truncated.
	RefuseReadingOverBudget Code = "reading_over_budget"
	// RefuseHypotheticalUnavailable: the engine cannot plan with a
	// hypothetical index (PostgreSQL without hypopg, every other engine).
	RefuseHypotheticalUnavailable Code = "hypothetical_index_unavailable"

	// RefuseUnverifiablePlan: compare_plans named something that is not an
	// estimating plan this run read.
	RefuseUnverifiablePlan Code = "unverifiable_plan"
	// RefusePlanResultReleased: the plan is this run's, and its rows are no
	// longer held.
	RefusePlanResultReleased Code = "plan_result_released"
	// RefuseAnswerAlreadyRecorded: the run presented its answer already.
	RefuseAnswerAlreadyRecorded Code = "answer_already_recorded"
	// RefuseAnswerArtifactUnknown: present_answer named a result this run
	// never produced.
	RefuseAnswerArtifactUnknown Code = "answer_artifact_unknown"
	// RefuseAnswerNotADataRead: the result is a plan, a profile, a schema
	// read or a reading, not a read of the data.
	RefuseAnswerNotADataRead Code = "answer_not_a_data_read"
	// RefuseAnswerStatementUnknown: no statement of the run produced it.
	RefuseAnswerStatementUnknown Code = "answer_statement_unknown"
	// RefuseAnswerResultReleased: the rows are no longer held, so the
	// presentation (a table or a chart) cannot be checked against them.
	RefuseAnswerResultReleased Code = "answer_result_released"
	// RefuseChartColumnNotInResult: a column the chart names is not one of
	// the result's.
	RefuseChartColumnNotInResult Code = "chart_column_not_in_result"
	// RefuseChartColumnNotNumeric: a y column does not hold numbers (more
	// than 80 % of its non-null values must parse as numbers).
	RefuseChartColumnNotNumeric Code = "chart_column_not_numeric"
	// RefuseChartTooFewRows: fewer than two rows.
	RefuseChartTooFewRows Code = "chart_too_few_rows"
	// RefuseChartShapeMismatch: a pie with several y columns, a scatter
	// whose x is not numeric, or a type outside ChartTypes.
	RefuseChartShapeMismatch Code = "chart_shape_mismatch"
)

// Refusal codes of the run loop (the orchestrator), each written to the
// ledger in a tool-refused entry.
const (
	// RefuseRefused: the executor refused without saying why.
	RefuseRefused Code = "refused"
	// RefuseUnknownTool: the call names no tool of the run.
	RefuseUnknownTool Code = "unknown_tool"
	// RefuseUnresolvedEvidence: a citation the run cannot resolve.
	RefuseUnresolvedEvidence Code = "unresolved_evidence"
	// RefuseStatementBudget: the run's statement budget is spent.
	RefuseStatementBudget Code = "statement_budget_exhausted"
	// RefuseDBTimeBudget: the run's database-time budget is spent.
	RefuseDBTimeBudget Code = "db_time_exhausted"
	// RefuseRepairBudget: the run's repair budget is spent.
	RefuseRepairBudget Code = "repair_budget_exhausted"
	// RefuseStepIndeterminate: the step was invoked with no outcome and is
	// never run again.
	RefuseStepIndeterminate Code = "step_indeterminate"
	// RefuseRunDeadline: the run's deadline passed.
	RefuseRunDeadline Code = "run_deadline_exceeded"
	// RefuseCallCutShort: the call was cut at the model's output limit.
	RefuseCallCutShort Code = "call_cut_short"
	// RefuseMalformedCall: a call the vendor called malformed, or text that
	// starts a call and does not parse.
	RefuseMalformedCall Code = "malformed_call"
	// RefuseEvidenceUnseen: a citation names a result produced in the same
	// turn as the citing call; the model has not seen its rows.
	RefuseEvidenceUnseen Code = "evidence_unseen"
	// RefuseReportIncomplete: the report would end the run unanswered, and
	// the model has not yet been told of that shortfall.
	RefuseReportIncomplete Code = "report_incomplete"
	// RefuseRepeatedCall: the call that ended a run for repeating itself.
	RefuseRepeatedCall Code = "repeated_call"
)
