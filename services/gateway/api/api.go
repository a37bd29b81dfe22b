// Package api holds the bodies, paths and codes of Sonde's HTTP API. The
// gateway's handlers and the Go client both use these types, so the two
// cannot drift apart.
package api

import (
	"net/url"
	"strconv"
	"time"

	"github.com/sondehq/sonde/contracts"
)

// Paths of the HTTP API. Paths that take a run or correlation id are built by
// the functions below.
const (
	PathHealth      = "/healthz"
	PathReady       = "/readyz"
	PathConfig      = "/api/agent/config"
	PathRuns        = "/api/agent/runs"
	PathConnections = "/api/connections"
	// PathOpenAPI serves the OpenAPI 3.1 document of this API, without a
	// token (docs/openapi.json is the same document).
	PathOpenAPI = "/openapi.json"
)

// Headers of the run-start request and its answer.
const (
	// HeaderIdempotencyKey on POST /api/agent/runs makes a retried start
	// return the run the first one created instead of starting another.
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderIdempotentReplayed is "true" on the answer to a start whose key
	// named a run that already existed.
	HeaderIdempotentReplayed = "Idempotent-Replayed"
)

// RunPath is the path of one run.
func RunPath(runID string) string { return PathRuns + "/" + url.PathEscape(runID) }

// StreamPath is the path of one run's live ledger.
func StreamPath(runID string) string { return RunPath(runID) + "/stream" }

// ArtifactPath is the path of one stored result of a run.
func ArtifactPath(runID, correlationID string) string {
	return RunPath(runID) + "/artifacts/" + url.PathEscape(correlationID)
}

// Content types of the run stream.
const (
	// ContentTypeNDJSON is one contracts.Entry JSON object per line.
	ContentTypeNDJSON = "application/x-ndjson"
	// ContentTypeSSE is server-sent events: id is the entry's position, event
	// its kind, data the entry JSON.
	ContentTypeSSE = "text/event-stream"
)

// Error codes the HTTP layer adds; each is declared in contracts with every
// other code, and named here for the routes that answer it.
const (
	// CodeNotFound: no route matches the request's path.
	CodeNotFound = contracts.CodeNotFound
	// CodeMethodNotAllowed: the path exists, the method does not.
	CodeMethodNotAllowed = contracts.CodeMethodNotAllowed
	// CodeModelCapabilityMissing: an agent run was refused because the
	// capability probe established the model cannot do the job (422, with
	// AgentModelRefusal's fields).
	CodeModelCapabilityMissing = contracts.CodeModelCapabilityMissing
	// CodeCORSOriginNotAllowed: a CORS preflight came from an origin the
	// operator did not list (403).
	CodeCORSOriginNotAllowed = contracts.CodeCORSOriginNotAllowed
	// CodeUnsupportedMediaType: a request body not sent as
	// application/json (415).
	CodeUnsupportedMediaType = contracts.CodeUnsupportedMediaType
	// CodeHostNotAllowed: a request whose Host names neither this machine
	// nor a host the operator listed (403): a DNS-rebinding page's.
	CodeHostNotAllowed = contracts.CodeHostNotAllowed
	// CodeOriginNotAllowed: a browser request from a page of another origin
	// the operator did not list (403).
	CodeOriginNotAllowed = contracts.CodeOriginNotAllowed
	// CodeRequestTimeout: a request body still arriving when the body
	// deadline passed (408).
	CodeRequestTimeout = contracts.CodeRequestTimeout
)

// ErrorBody is every non-2xx answer: {"error":{"code":…,"message":…,"fix":…}}.
type ErrorBody struct {
	Error contracts.Error `json:"error"`
}

// Health answers GET /healthz and, when ready, GET /readyz.
type Health struct {
	Status string `json:"status"`
	// Detail lists what an operator should know although the server is
	// ready, e.g. a connection whose database cannot be opened and why.
	Detail []string `json:"detail,omitempty"`
}

// AgentConfig answers GET /api/agent/config: whether this server runs agents
// and, if not, which condition failed.
type AgentConfig struct {
	// Enabled is a literal boolean: a console compares it with true.
	Enabled bool `json:"enabled"`
	// Provider and Model name the configured model when Enabled.
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// Demo marks a replayed demonstration model.
	Demo bool `json:"demo,omitempty"`
	// Reason is the code of the failed condition when not Enabled:
	// contracts.CodeOperatorDisabled, CodeLedgerUnavailable or
	// CodeNoModelConfigured. It names an operator action, never a secret.
	Reason contracts.Code `json:"reason,omitempty"`
	// Detail explains Reason; it is sent to admin actors only.
	Detail string `json:"detail,omitempty"`
	// ModelTuning says what became of the operator's model-tuning document
	// (AGENT_MODEL_TUNING_PATH): applied, ignored (with the reason) or unset.
	// It is sent to admin actors only.
	ModelTuning *contracts.ModelTuning `json:"modelTuning,omitempty"`
	// Workflows are the workflows a run may be started with, served from
	// the server's workflow table (pkg/policy) so that no client keeps a
	// copy: the console's choice of workflow is built from it.
	Workflows []Workflow `json:"workflows"`
}

// Workflow is one row of the workflow table as callers are told of it.
type Workflow struct {
	// ID is the workflowType a run is started with.
	ID contracts.WorkflowType `json:"id"`
	// Label names it for people.
	Label string `json:"label"`
	// Goal says what a run of it is for.
	Goal string `json:"goal"`
	// Agent: agent-mode runs of it are driven (planning runs always are).
	Agent bool `json:"agent"`
	// AutoExecute: an agent-mode run may hand its answer to the editor.
	AutoExecute bool `json:"autoExecute"`
}

// AgentModelRefusal is the 422 answer to starting an agent run on a model
// the capability probe established unable to do the job: the API's error
// shape (code CodeModelCapabilityMissing) with what the model lacks.
type AgentModelRefusal struct {
	// Error's message is the probe's sentence, which names the model; its
	// fix says how to go on (planning mode, another model).
	Error contracts.Error `json:"error"`
	// Missing are the capabilities the run needed and did not get
	// (toolCalling, structuredOutput, streaming).
	Missing []string `json:"missing"`
	// Disproved are the capabilities the probe watched fail.
	Disproved []string `json:"disproved"`
	// Mode is the mode the refusal is about.
	Mode contracts.Mode `json:"mode"`
}

// StartRunRequest is the body of POST /api/agent/runs. Unknown fields are
// refused; fields tagged id:"<kind>" are checked with contracts.CheckID.
type StartRunRequest struct {
	// Mode defaults to agent.
	Mode contracts.Mode `json:"mode,omitempty"`
	// WorkflowType defaults to investigation; an unknown one is refused, never
	// defaulted.
	WorkflowType contracts.WorkflowType `json:"workflowType,omitempty"`
	// Objective is what the user wants to know. Required.
	Objective string `json:"objective"`
	// ConnectionID names a connection of GET /api/connections. Required.
	ConnectionID string `json:"connectionId" id:"connection"`
	// PreviousRunID continues the conversation of an earlier run of the caller.
	PreviousRunID string `json:"previousRunId,omitempty" id:"run"`
	// AutoExecute hands the answer to the editor (data-analysis, agent mode only).
	AutoExecute bool `json:"autoExecute,omitempty"`
}

// StartRunResponse answers POST /api/agent/runs with 202: the run id and the
// mode and workflow type the run's ledger persisted.
type StartRunResponse struct {
	RunID        string                 `json:"runId"`
	Mode         contracts.Mode         `json:"mode"`
	WorkflowType contracts.WorkflowType `json:"workflowType"`
}

// Limits of GET /api/agent/runs.
const (
	// DefaultRunsLimit is the page size when limit is left out.
	DefaultRunsLimit = 20
	// MaxRunsLimit is the largest page a caller may ask for.
	MaxRunsLimit = 100
)

// RunSummary is one run of GET /api/agent/runs: what a list shows, folded
// from the run's ledger (GET /api/agent/runs/{id} has the whole record).
type RunSummary struct {
	RunID        string                 `json:"runId"`
	Status       contracts.RunStatus    `json:"status"`
	Mode         contracts.Mode         `json:"mode"`
	WorkflowType contracts.WorkflowType `json:"workflowType"`
	Objective    string                 `json:"objective"`
	ConnectionID string                 `json:"connectionId"`
	StartedAt    time.Time              `json:"startedAt"`
	// FinishedAt, StopReason and GoalVerdict are set once the run has ended
	// (GoalVerdict only when a verifier ran).
	FinishedAt  *time.Time             `json:"finishedAt,omitempty"`
	StopReason  contracts.StopReason   `json:"stopReason,omitempty"`
	GoalVerdict *contracts.GoalVerdict `json:"goalVerdict,omitempty"`
	// RootRunID and Position place the run in its conversation: the
	// conversation's first run and this run's place in it (1 for a run of
	// its own). Absent on runs recorded before conversations existed.
	RootRunID string `json:"rootRunId,omitempty"`
	Position  int    `json:"position,omitempty"`
	// ThreadDeclined is set when the run asked to continue a conversation and
	// started without it: "unavailable", "disabled" or "error".
	ThreadDeclined string `json:"threadDeclined,omitempty"`
}

// RunList answers GET /api/agent/runs: the caller's runs, the most recently
// started first, running ones included.
type RunList struct {
	Runs []RunSummary `json:"runs"`
	// Next is the cursor of the following page (?cursor=…), absent on the
	// last one. It is opaque.
	Next string `json:"next,omitempty"`
}

// RunsPath is the path of one page of the caller's runs: limit 0 and cursor
// "" are left out (the server's defaults).
func RunsPath(limit int, cursor string) string {
	q := url.Values{}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if len(q) == 0 {
		return PathRuns
	}
	return PathRuns + "?" + q.Encode()
}

// CancelResponse answers DELETE /api/agent/runs/{id} with 202: the request to
// stop was recorded; the run stops at its next checkpoint.
type CancelResponse struct {
	Status contracts.RunStatus `json:"status"`
}

// Connections answers GET /api/connections, sorted by id.
type Connections struct {
	Connections []contracts.ConnectionDescriptor `json:"connections"`
}

// StopSentence says in plain words why a run stopped, for the surfaces that
// show a run (the console, the CLI, MCP get_run); an unknown reason gets ""
// and is shown as its code.
func StopSentence(r contracts.StopReason) string {
	switch r {
	case contracts.StopReportComposed:
		return "the model composed its report"
	case contracts.StopTurnLimit:
		return "the run used all its turns"
	case contracts.StopStatementLimit:
		return "the run used all its statements"
	case contracts.StopDeadlineExceeded:
		return "the run reached its deadline"
	case contracts.StopCancelled:
		return "the run was cancelled"
	case contracts.StopModelStopped:
		return "the model stopped without composing a report"
	case contracts.StopFailed:
		return "the run failed"
	case contracts.StopRepeatedCall:
		return "the model sent the same call three times, so the run was stopped rather than spend its turns on it"
	case contracts.StopQuestion:
		return "the model asked you a question instead of answering; answer it by continuing the conversation"
	}
	return ""
}

// StopReasons are the stop reasons StopSentence knows, in the order the
// console lists them.
var StopReasons = []contracts.StopReason{
	contracts.StopReportComposed, contracts.StopTurnLimit, contracts.StopStatementLimit, contracts.StopDeadlineExceeded,
	contracts.StopCancelled, contracts.StopModelStopped, contracts.StopFailed, contracts.StopRepeatedCall, contracts.StopQuestion,
}
