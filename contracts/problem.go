package contracts

import "encoding/json"

// Code names a refusal or failure. It is stable, written in snake_case, and
// one vocabulary for every surface: a guard or run-loop refusal, a reply a
// service sends over NATS, an HTTP answer, what `sonde query --json` prints,
// an MCP tool error and a ledger entry all carry a Code from Codes.
type Code string

// Problem is every refusal or failure that crosses a boundary: a stable
// code, what was wrong, and how to fix it. HTTP answers it as
// {"error":{"code","message","fix"}}, MCP as the structured content of a
// tool error, NATS replies and ledger entries as a field.
type Problem struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"`
}

// Error says the code and what was wrong.
func (p *Problem) Error() string { return string(p.Code) + ": " + p.Message }

// UnmarshalJSON reads a Problem, and a refusal recorded before refusals
// carried this shape, whose message was named "reason": recorded ledgers
// still fold.
func (p *Problem) UnmarshalJSON(b []byte) error {
	var w struct {
		Code    Code    `json:"code"`
		Message *string `json:"message"`
		Reason  string  `json:"reason"`
		Fix     string  `json:"fix"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*p = Problem{Code: w.Code, Message: w.Reason, Fix: w.Fix}
	if w.Message != nil {
		p.Message = *w.Message
	}
	return nil
}

// Error is the Problem a service replies with over NATS (a StartRunReply's
// error, say); the name is kept for the replies that carry it.
type Error = Problem

// Refusal is the guard's, a profile's or the run loop's refusal of a
// statement or a call before it had an effect: a Problem whose code is one
// of the Refuse… codes.
type Refusal = Problem

// Codes of the run commands and the HTTP API (the refusal codes are in
// refusal.go).
const (
	// CodeBadRequest: the request itself is malformed. The executor refuses
	// a malformed request with the same code (RefuseBadRequest).
	CodeBadRequest Code = "bad_request"
	// CodeUnknownWorkflow: workflowType names none of the workflows.
	CodeUnknownWorkflow Code = "unknown_workflow"
	// CodeUnknownMode: mode is not agent or planning.
	CodeUnknownMode Code = "unknown_mode"
	// CodeMissingObjective: the objective is missing or blank.
	CodeMissingObjective Code = "missing_objective"
	// CodeUnknownConnection: the request names no connection this server
	// (or executor) serves; RefuseUnknownConnection is the same code.
	CodeUnknownConnection Code = "unknown_connection"
	// CodeRunNotFound: no such run, or not the caller's.
	CodeRunNotFound Code = "run_not_found"
	// CodeRunExists: a run with that id was already started.
	CodeRunExists Code = "run_exists"
	// CodeRunFinished: the run has already finished.
	CodeRunFinished Code = "run_finished"
	// CodeUnavailable: a service that must answer does not.
	CodeUnavailable Code = "unavailable"
	// CodeInternal: a failure none of the other codes describes.
	CodeInternal Code = "internal"
	// CodeUnauthorized: no or an unknown API token.
	CodeUnauthorized Code = "unauthorized"
	// CodeArtifactNotFound: the run holds no stored result under that id.
	CodeArtifactNotFound Code = "artifact_not_found"
	// CodeNoModelConfigured: no model is configured for agent runs.
	CodeNoModelConfigured Code = "no_model_configured"
	// CodeOperatorDisabled: the operator turned agent runs off.
	CodeOperatorDisabled Code = "operator_disabled"
	// CodeLedgerUnavailable: the ledger store cannot record runs now.
	CodeLedgerUnavailable Code = "ledger_unavailable"
	// CodeUnsupportedFeature: the request asks for something this release
	// does not do.
	CodeUnsupportedFeature Code = "unsupported_feature"
	// CodeIdempotencyConflict: an Idempotency-Key was reused with a
	// different request.
	CodeIdempotencyConflict Code = "idempotency_key_reused"
	// CodeInvalidID: an identifier CheckID refuses (400 at the HTTP edge).
	CodeInvalidID Code = "invalid_id"

	// CodeNotFound: no route matches the request's path.
	CodeNotFound Code = "not_found"
	// CodeMethodNotAllowed: the route exists but not with that method.
	CodeMethodNotAllowed Code = "method_not_allowed"
	// CodeModelCapabilityMissing: an agent run on a model the capability
	// probe established unable to do it.
	CodeModelCapabilityMissing Code = "model_capability_missing"
	// CodeCORSOriginNotAllowed: a CORS preflight from an origin the server
	// does not list.
	CodeCORSOriginNotAllowed Code = "cors_origin_not_allowed"
	// CodeUnsupportedMediaType: a body not declared as JSON.
	CodeUnsupportedMediaType Code = "unsupported_media_type"
	// CodeHostNotAllowed: a Host header this server does not answer for.
	CodeHostNotAllowed Code = "host_not_allowed"
	// CodeOriginNotAllowed: a browser request from a page of another origin.
	CodeOriginNotAllowed Code = "origin_not_allowed"
	// CodeRequestTimeout: the request body did not arrive in time.
	CodeRequestTimeout Code = "request_timeout"
	// CodeTableNotFound: the connection's catalog holds no such table.
	CodeTableNotFound Code = "table_not_found"
	// CodeAmbiguousTable: the name matches several tables.
	CodeAmbiguousTable Code = "ambiguous_table"
	// CodeHandoverNoBody: the handover route takes no body.
	CodeHandoverNoBody Code = "handover_takes_no_body"
	// CodeNoAnswer: the run composed no answer to hand over.
	CodeNoAnswer Code = "no_answer"
	// CodeNotAutoExecuted: the gate did not auto-execute the answer.
	CodeNotAutoExecuted Code = "not_auto_executed"
	// CodeConnectionGone: the run's connection is no longer served.
	CodeConnectionGone Code = "connection_gone"
	// CodeConnectionChanged: the connection id now reaches another database
	// than the run read.
	CodeConnectionChanged Code = "connection_changed"
	// CodeConnectionUnverified: no connection identity to compare.
	CodeConnectionUnverified Code = "connection_unverified"

	// CodeInvalidArguments: a tool call's arguments are malformed or out of
	// bounds (the run loop's refusal and the MCP server's error alike).
	CodeInvalidArguments Code = "invalid_arguments"
	// CodeGatewayUnreachable: no answer came from the gateway (MCP, CLI).
	CodeGatewayUnreachable Code = "gateway_unreachable"
	// CodeExecutorUnanswered: the executor received the statement and did
	// not answer within its timeout and the gateway's grace (504): the
	// statement may have run, and may still be running.
	CodeExecutorUnanswered Code = "executor_unanswered"
	// CodeHTTPStatus: a gateway answer that was not the API's error shape
	// (a proxy's page, say); the client keeps the status beside it.
	CodeHTTPStatus Code = "http_status"
)

// Codes of a database error, one per DBErrorClass (DBErrorClass.Code).
const (
	CodeDBSyntax        Code = "db_syntax"
	CodeDBMissingObject Code = "db_missing_object"
	CodeDBPermission    Code = "db_permission"
	CodeDBTimeout       Code = "db_timeout"
	CodeDBCancelled     Code = "db_cancelled"
	CodeDBResource      Code = "db_resource"
	CodeDBUnavailable   Code = "db_unavailable"
	CodeDBOther         Code = "db_other"
)

// dbCodes maps each database error class to its code.
var dbCodes = map[DBErrorClass]Code{
	DBSyntax: CodeDBSyntax, DBMissingObject: CodeDBMissingObject, DBPermission: CodeDBPermission,
	DBTimeout: CodeDBTimeout, DBCancelled: CodeDBCancelled, DBResource: CodeDBResource,
	DBUnavailable: CodeDBUnavailable, DBOther: CodeDBOther,
}

// Code is the class's code in a Problem (CodeDBOther for a class this
// release does not know).
func (c DBErrorClass) Code() Code {
	if code, ok := dbCodes[c]; ok {
		return code
	}
	return CodeDBOther
}

// Codes of a schema snapshot that could not be captured
// (ContextUnavailable.Code, besides the refusal the executor gave).
const (
	// CodeExecutorUnavailable: no executor serves the connection's engine
	// (the schema read, or a statement the run loop could not send).
	CodeExecutorUnavailable Code = "executor_unavailable"
	// CodeExecutorNoReply: the executor did not answer the schema read in
	// time.
	CodeExecutorNoReply Code = "executor_no_reply"
	// CodeSchemaReadFailed: the schema read failed at the database.
	CodeSchemaReadFailed Code = "schema_read_failed"
	// CodeInventoryMissing: the executor answered without an inventory.
	CodeInventoryMissing Code = "inventory_missing"
)

// Codes lists every code any surface or ledger writes, in a stable order.
// A code not in this list is never written (TestEveryWrittenCodeIsDeclared).
var Codes = []Code{
	CodeBadRequest, CodeUnknownWorkflow, CodeUnknownMode, CodeMissingObjective, CodeUnknownConnection,
	CodeRunNotFound, CodeRunExists, CodeRunFinished, CodeUnavailable, CodeInternal, CodeUnauthorized,
	CodeArtifactNotFound, CodeNoModelConfigured, CodeOperatorDisabled, CodeLedgerUnavailable,
	CodeUnsupportedFeature, CodeIdempotencyConflict, CodeInvalidID,
	CodeNotFound, CodeMethodNotAllowed, CodeModelCapabilityMissing, CodeCORSOriginNotAllowed,
	CodeUnsupportedMediaType, CodeHostNotAllowed, CodeOriginNotAllowed, CodeRequestTimeout,
	CodeTableNotFound, CodeAmbiguousTable, CodeHandoverNoBody, CodeNoAnswer, CodeNotAutoExecuted,
	CodeConnectionGone, CodeConnectionChanged, CodeConnectionUnverified,
	CodeInvalidArguments, CodeGatewayUnreachable, CodeExecutorUnanswered, CodeHTTPStatus,
	CodeDBSyntax, CodeDBMissingObject, CodeDBPermission, CodeDBTimeout, CodeDBCancelled, CodeDBResource,
	CodeDBUnavailable, CodeDBOther,
	CodeExecutorUnavailable, CodeExecutorNoReply, CodeSchemaReadFailed, CodeInventoryMissing,

	RefuseEmpty, RefuseUnparsable, RefuseNotOneStatement, RefuseNotASelect, RefuseNotReadOnly,
	RefuseQuerySettings, RefuseFunctionDenied, RefuseTableFunction, RefuseTableNotReadable,
	RefuseLargeTableUnbounded, RefuseUnsupported, RefuseEngineParse, RefuseTooComplex,
	RefuseResultTooLarge, RefuseAlreadyFailed, RefuseExecutorBusy, RefuseConnectionUnavailable,
	RefuseRefused,
	RefuseTableNotInventoried, RefuseTableSpellingAmbiguous, RefuseObjectNotProfilable,
	RefuseColumnNotInTable, RefuseKindUnsupported, RefuseReadingOverBudget, RefuseHypotheticalUnavailable,
	RefuseUnverifiablePlan, RefusePlanResultReleased, RefuseAnswerAlreadyRecorded, RefuseAnswerArtifactUnknown,
	RefuseAnswerNotADataRead, RefuseAnswerStatementUnknown, RefuseAnswerResultReleased,
	RefuseChartColumnNotInResult, RefuseChartColumnNotNumeric, RefuseChartTooFewRows, RefuseChartShapeMismatch,

	RefuseUnknownTool, RefuseUnresolvedEvidence, RefuseStatementBudget, RefuseDBTimeBudget,
	RefuseRepairBudget, RefuseStepIndeterminate, RefuseRunDeadline, RefuseCallCutShort,
	RefuseMalformedCall, RefuseEvidenceUnseen, RefuseReportIncomplete, RefuseRepeatedCall,
}

// Declared reports whether c is in Codes.
func (c Code) Declared() bool {
	for _, d := range Codes {
		if d == c {
			return true
		}
	}
	return false
}
