package contracts

import (
	"encoding/json"
	"time"
)

// StepStatus is the folded state of one step.
type StepStatus string

// The step statuses.
const (
	// StepInvoked: recorded before its effect, no outcome yet (a live drive).
	StepInvoked StepStatus = "invoked"
	// StepCompleted: ran and produced its result.
	StepCompleted StepStatus = "completed"
	// StepFailed: the database refused or failed it.
	StepFailed StepStatus = "failed"
	// StepRefused: refused before any effect.
	StepRefused StepStatus = "refused"
	// StepIndeterminate: invoked with no outcome when its drive ended; never re-run.
	StepIndeterminate StepStatus = "indeterminate"
)

// Step is one tool call as the fold sees it.
type Step struct {
	StepID        string           `json:"stepId,omitempty"`
	Turn          int              `json:"turn"`
	Tool          string           `json:"tool"`
	Arguments     json.RawMessage  `json:"arguments,omitempty"`
	Status        StepStatus       `json:"status"`
	CorrelationID string           `json:"correlationId,omitempty"`
	Artifact      *ArtifactSummary `json:"artifact,omitempty"`
	Refusal       *Refusal         `json:"refusal,omitempty"`
	DBError       *DBError         `json:"dbError,omitempty"`
	DurationMs    int64            `json:"durationMs,omitempty"`
	// Fingerprint is the guard's canonical fingerprint of a read's statement.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Plan summarises an estimating plan the step read.
	Plan *PlanSummary `json:"plan,omitempty"`
}

// BudgetSpent is what a run has used of its budget.
type BudgetSpent struct {
	Turns      int   `json:"turns"`
	Statements int   `json:"statements"`
	DBTimeMs   int64 `json:"dbTimeMs"`
	Repairs    int   `json:"repairs"`
}

// Record is a run as a pure fold over its ledger. No copy of it is stored
// anywhere: every reader folds the entries itself.
type Record struct {
	RunID         string       `json:"runId"`
	Status        RunStatus    `json:"status"`
	Mode          Mode         `json:"mode"`
	WorkflowType  WorkflowType `json:"workflowType"`
	Objective     string       `json:"objective"`
	ConnectionID  string       `json:"connectionId"`
	Actor         Actor        `json:"actor"`
	PreviousRunID string       `json:"previousRunId,omitempty"`
	// ConnectionIdentity fingerprints the database the connection reached
	// when the run started (RunStarted.ConnectionIdentity); empty for a run
	// recorded before identities existed.
	ConnectionIdentity string `json:"connectionIdentity,omitempty"`
	// Thread is the conversation the run belongs to (root run, position,
	// and whether the previous run's context was declined).
	Thread *Thread     `json:"thread,omitempty"`
	Budget Budget      `json:"budget"`
	Spent  BudgetSpent `json:"spent"`
	// Usage sums the token usage of the run's model turns.
	Usage Usage    `json:"usage"`
	Tools []string `json:"tools"`
	// Model is the driver of the latest drive; Demo marks a replayed model.
	Model    string `json:"model,omitempty"`
	Provider string `json:"provider,omitempty"`
	Demo     bool   `json:"demo,omitempty"`
	Drives   int    `json:"drives"`
	// Context is the captured inventory's fingerprint, if any.
	ContextFingerprint string  `json:"contextFingerprint,omitempty"`
	Steps              []Step  `json:"steps"`
	Report             []Claim `json:"report,omitempty"`
	// Plan is the statement a planning run drafted, classified and checked;
	// Closing is the model's last closing prose (a planning run's whole
	// answer).
	Plan    *PlanStatementDrafted `json:"plan,omitempty"`
	Closing string                `json:"closing,omitempty"`
	// What the specialist workflows recorded: plan comparisons,
	// recommendations, table profiles and the presented answer.
	Comparisons     []PlanComparison `json:"comparisons,omitempty"`
	Recommendations []Recommendation `json:"recommendations,omitempty"`
	Profiles        []TableProfiled  `json:"profiles,omitempty"`
	Answer          *AnswerComposed  `json:"answer,omitempty"`
	StopReason      StopReason       `json:"stopReason,omitempty"`
	Reason          FailureReason    `json:"reason,omitempty"`
	GoalVerdict     *GoalVerdict     `json:"goalVerdict,omitempty"`
	Detail          string           `json:"detail,omitempty"`
	// Question is the question a run stopped on (StopQuestion).
	Question   string     `json:"question,omitempty"`
	StartedAt  time.Time  `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
	// Entries is the number of ledger entries folded; LastSeq the last one's sequence.
	Entries int    `json:"entries"`
	LastSeq uint64 `json:"lastSeq"`
}
