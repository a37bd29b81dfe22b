package contracts

import "time"

// Mode is how a run executes. It is fixed at start and read back from the
// ledger ever after.
type Mode string

const (
	// ModeAgent gives the model the workflow's read-class tools.
	ModeAgent Mode = "agent"
	// ModePlanning gives the model no tools: it drafts a statement the user runs.
	ModePlanning Mode = "planning"
)

// Valid reports whether m is a known mode.
func (m Mode) Valid() bool { return m == ModeAgent || m == ModePlanning }

// WorkflowType is what a run is for. It is fixed at start and chooses the
// run's tools, budgets and answered rule.
type WorkflowType string

// The workflow types.
const (
	WorkflowInvestigation      WorkflowType = "investigation"
	WorkflowQueryOptimization  WorkflowType = "query-optimization"
	WorkflowDatabaseAssessment WorkflowType = "database-assessment"
	WorkflowOperations         WorkflowType = "operations"
	WorkflowDataAnalysis       WorkflowType = "data-analysis"
)

// WorkflowTypes lists every workflow type in a stable order.
var WorkflowTypes = []WorkflowType{
	WorkflowInvestigation, WorkflowQueryOptimization, WorkflowDatabaseAssessment,
	WorkflowOperations, WorkflowDataAnalysis,
}

// Valid reports whether w is a known workflow type.
func (w WorkflowType) Valid() bool {
	for _, k := range WorkflowTypes {
		if w == k {
			return true
		}
	}
	return false
}

// RunStatus is the folded status of a run.
type RunStatus string

// The run statuses. Succeeded, failed and cancelled are terminal.
const (
	StatusQueued    RunStatus = "queued"
	StatusRunning   RunStatus = "running"
	StatusSucceeded RunStatus = "succeeded"
	StatusFailed    RunStatus = "failed"
	StatusCancelled RunStatus = "cancelled"
)

// Terminal reports whether s ends a run.
func (s RunStatus) Terminal() bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusCancelled
}

// Role is what an actor may do.
type Role string

// The roles.
const (
	RoleAdmin  Role = "admin"
	RoleMember Role = "member"
)

// Actor is who opened a run. It is written into the run header and every later
// authorization decision reads it from there.
type Actor struct {
	// ID names the actor; runs are visible only to the actor that opened them.
	ID   string `json:"id"`
	Role Role   `json:"role"`
}

// StartRun asks the orchestrator to start a run, or to resume one: with a
// RunID whose ledger already exists, it reads and folds that ledger and
// continues it (the other fields are then ignored; the ledger's header wins).
type StartRun struct {
	// RunID is chosen by the caller for a new run (so a retried request is the
	// same run) and names the run to resume. Letters, digits, '-' and '_'.
	RunID        string       `json:"runId"`
	Mode         Mode         `json:"mode,omitempty"`
	WorkflowType WorkflowType `json:"workflowType,omitempty"`
	Objective    string       `json:"objective,omitempty"`
	ConnectionID string       `json:"connectionId,omitempty"`
	// PreviousRunID continues the conversation of an earlier run.
	PreviousRunID string `json:"previousRunId,omitempty"`
	// AutoExecute hands the answer to the editor (data-analysis, agent mode).
	AutoExecute bool  `json:"autoExecute,omitempty"`
	Actor       Actor `json:"actor"`
	// NotAfter, when set, is the instant the caller stops waiting for the
	// reply: the orchestrator writes no run-started header after it, and
	// refuses (CodeUnavailable) a new run it would write later. A caller
	// that got no reply can then learn for certain, once NotAfter has
	// passed, whether the run was created, by reading its ledger. A resume
	// is never refused for it.
	NotAfter time.Time `json:"notAfter,omitzero"`
}

// StartRunReply answers StartRun: the run id and the PERSISTED mode and
// workflow type, or an error.
type StartRunReply struct {
	RunID        string       `json:"runId,omitempty"`
	Mode         Mode         `json:"mode,omitempty"`
	WorkflowType WorkflowType `json:"workflowType,omitempty"`
	// Resumed is true when the run already had a ledger.
	Resumed bool   `json:"resumed,omitempty"`
	Error   *Error `json:"error,omitempty"`
}

// CancelRun asks a run to stop. It is honoured at the run's next checkpoint.
type CancelRun struct {
	RunID string `json:"runId"`
	Actor Actor  `json:"actor"`
}

// CancelRunReply answers CancelRun.
type CancelRunReply struct {
	// Status is the run's status after the request was recorded.
	Status RunStatus `json:"status,omitempty"`
	Error  *Error    `json:"error,omitempty"`
}

// RunHealth answers SubjectRunHealth: whether the orchestrator that
// answered can record runs now, and if not, why.
type RunHealth struct {
	Ready bool `json:"ready"`
	// Cause says what keeps it from recording runs, e.g. the JetStream store
	// refusing ledger appends for lack of storage.
	Cause string `json:"cause,omitempty"`
}
