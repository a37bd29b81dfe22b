package contracts

import (
	"encoding/json"
	"fmt"
	"time"
)

// EventKind names a ledger entry.
type EventKind string

// The ledger event kinds. Every kind has a payload type below; EventKinds maps
// one to the other.
const (
	KindRunStarted           EventKind = "run-started"
	KindDriverResolved       EventKind = "driver-resolved"
	KindContextCaptured      EventKind = "context-captured"
	KindContextUnavailable   EventKind = "context-unavailable"
	KindStatementDrafted     EventKind = "statement-drafted"
	KindPlanStatementDrafted EventKind = "plan-statement-drafted"
	KindToolInvoked          EventKind = "tool-invoked"
	KindToolCompleted        EventKind = "tool-completed"
	KindToolRefused          EventKind = "tool-refused"
	KindReportComposed       EventKind = "report-composed"
	KindClosingStatement     EventKind = "closing-statement"
	KindPlanComparison       EventKind = "plan-comparison"
	KindRecommendation       EventKind = "recommendation"
	KindTableProfiled        EventKind = "table-profiled"
	KindAnswerComposed       EventKind = "answer-composed"
	KindRunFinished          EventKind = "run-finished"
)

// EventKinds maps every kind to a zero value of its payload type. Tests use
// it to prove that every kind has a schema and decodes.
var EventKinds = map[EventKind]func() any{
	KindRunStarted:           func() any { return new(RunStarted) },
	KindDriverResolved:       func() any { return new(DriverResolved) },
	KindContextCaptured:      func() any { return new(ContextCaptured) },
	KindContextUnavailable:   func() any { return new(ContextUnavailable) },
	KindStatementDrafted:     func() any { return new(StatementDrafted) },
	KindPlanStatementDrafted: func() any { return new(PlanStatementDrafted) },
	KindToolInvoked:          func() any { return new(ToolInvoked) },
	KindToolCompleted:        func() any { return new(ToolCompleted) },
	KindToolRefused:          func() any { return new(ToolRefused) },
	KindReportComposed:       func() any { return new(ReportComposed) },
	KindClosingStatement:     func() any { return new(ClosingStatement) },
	KindPlanComparison:       func() any { return new(PlanComparison) },
	KindRecommendation:       func() any { return new(Recommendation) },
	KindTableProfiled:        func() any { return new(TableProfiled) },
	KindAnswerComposed:       func() any { return new(AnswerComposed) },
	KindRunFinished:          func() any { return new(RunFinished) },
}

// Entry is one ledger entry as stored: the envelope every kind shares and the
// kind's payload.
type Entry struct {
	// V is the contract version the entry was written under.
	V    int       `json:"v"`
	Kind EventKind `json:"kind"`
	// RunID repeats the subject's run id so an entry read alone is traceable.
	RunID string    `json:"runId"`
	At    time.Time `json:"at"`
	// Seq is the entry's position in its run's ledger (1-based). It is filled
	// in on read from the stream, never trusted from the payload.
	Seq uint64 `json:"seq,omitempty"`
	// StreamSeq is the entry's sequence in the ledger stream, filled in on
	// read; a writer states the last one it saw when it appends.
	StreamSeq uint64          `json:"streamSeq,omitempty"`
	Data      json.RawMessage `json:"data"`
}

// NewEntry encodes payload as an entry of kind.
func NewEntry(runID string, kind EventKind, at time.Time, payload any) (Entry, error) {
	if _, ok := EventKinds[kind]; !ok {
		return Entry{}, fmt.Errorf("contracts: unknown event kind %q", kind)
	}
	b, err := json.Marshal(payload)
	if err != nil {
		return Entry{}, fmt.Errorf("contracts: encode %s: %w", kind, err)
	}
	return Entry{V: Version, Kind: kind, RunID: runID, At: at.UTC(), Data: b}, nil
}

// Decode returns the entry's payload as its kind's type.
func (e Entry) Decode() (any, error) {
	mk, ok := EventKinds[e.Kind]
	if !ok {
		return nil, fmt.Errorf("contracts: unknown event kind %q", e.Kind)
	}
	v := mk()
	if err := json.Unmarshal(e.Data, v); err != nil {
		return nil, fmt.Errorf("contracts: decode %s: %w", e.Kind, err)
	}
	return v, nil
}

// Budget is the policy row a run is bound by, chosen from the run's persisted
// workflow and recorded in its header so a recorded denial traces back to the
// numbers that produced it.
type Budget struct {
	// PolicyVersion names the row, e.g. "agent-read-only.investigation.1".
	PolicyVersion      string `json:"policyVersion"`
	MaxTurns           int    `json:"maxTurns"`
	MaxStatements      int    `json:"maxStatements"`
	DeadlineMs         int64  `json:"deadlineMs"`
	DBTimeMs           int64  `json:"dbTimeMs"`
	StatementTimeoutMs int64  `json:"statementTimeoutMs"`
	MaxRows            int    `json:"maxRows"`
	MaxBytes           int    `json:"maxBytes"`
	// ModelTurnTimeoutMs bounds one model call: the orchestrator sends it,
	// cut to the run's remaining time, as ModelTurnRequest.TimeoutMs.
	ModelTurnTimeoutMs int64 `json:"modelTurnTimeoutMs"`
	MaxRepairs         int   `json:"maxRepairs"`
	ReportReserveTurns int   `json:"reportReserveTurns"`
	ReportReserveMs    int64 `json:"reportReserveMs"`
}

// RunStarted is the header of every ledger: the run's fixed identity.
type RunStarted struct {
	Mode          Mode         `json:"mode"`
	WorkflowType  WorkflowType `json:"workflowType"`
	Objective     string       `json:"objective"`
	ConnectionID  string       `json:"connectionId"`
	Engine        Engine       `json:"engine,omitempty"`
	Actor         Actor        `json:"actor"`
	PreviousRunID string       `json:"previousRunId,omitempty"`
	// ConnectionIdentity fingerprints the database the connection reached
	// when the run started (ConnectionDescriptor.Identity): conversations and
	// reused captures are checked against it, not against the id.
	ConnectionIdentity string `json:"connectionIdentity,omitempty"`
	// FenceMark is drawn at random when the run starts: every fence the
	// server opens in the run's transcript carries it, and the rules name
	// it, so text imitating a fence cannot carry it.
	FenceMark string `json:"fenceMark,omitempty"`
	// Thread is the conversation the run belongs to; nil on runs recorded
	// before conversations existed.
	Thread      *Thread `json:"thread,omitempty"`
	AutoExecute bool    `json:"autoExecute,omitempty"`
	Budget      Budget  `json:"budget"`
	// Tools are the tools this run's mode and workflow offer the model.
	Tools []string `json:"tools"`
}

// DriverResolved records, once per drive, which model drives the run and where
// its settings came from.
type DriverResolved struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Demo marks a replayed demonstration model: the run is real, the model is not.
	Demo bool `json:"demo,omitempty"`
	// SettingsSource is "bundled", "operator" or "operator-ignored".
	SettingsSource string `json:"settingsSource,omitempty"`
	// SettingsPath and SettingsDigest name the operator's tuning document
	// the settings came from (or that was ignored).
	SettingsPath   string `json:"settingsPath,omitempty"`
	SettingsDigest string `json:"settingsDigest,omitempty"`
	// Settings are the per-model settings this drive applies (turn limit,
	// readings before the report is asked for, whether an empty turn is asked
	// again), so a ledger shows what bounded its model.
	Settings *ModelSettings `json:"settings,omitempty"`
	// Drive counts the drives of this run: 1 for the first, 2 after one resume.
	Drive int `json:"drive"`
	// Orchestrator names the process that drives.
	Orchestrator string `json:"orchestrator,omitempty"`
}

// ContextCaptured records the schema inventory the server read before the
// first turn. It is citable as {"source":"context-snapshot","fingerprint":…}.
type ContextCaptured struct {
	Fingerprint string `json:"fingerprint"`
	// CorrelationID names the artifact the inventory is stored in, under
	// InventoryRunID's run (this run's, unless the capture was reused).
	CorrelationID string `json:"correlationId,omitempty"`
	// InventoryRunID is the run whose capture this one reuses; empty when
	// this run read the inventory itself.
	InventoryRunID string `json:"inventoryRunId,omitempty"`
	// Tables counts the readable relations the inventory holds; Total the
	// readable relations that exist (more when the capture was truncated).
	Tables int `json:"tables"`
	Total  int `json:"total,omitempty"`
	// Packed counts the relations named in Text; the rest are announced by
	// the omission notice.
	Packed int `json:"packed,omitempty"`
	// Unreadable counts relations left out by the readable patterns.
	Unreadable int  `json:"unreadable,omitempty"`
	Truncated  bool `json:"truncated,omitempty"`
	// Statements and DurationMs are what the capture cost the run's
	// statement and database-time budgets (0 when it reused an earlier
	// run's capture).
	Statements int   `json:"statements"`
	DurationMs int64 `json:"durationMs,omitempty"`
	// Text is the fenced rendering the model read.
	Text string `json:"text"`
}

// ContextUnavailable records that no inventory could be captured.
type ContextUnavailable struct {
	Code   Code   `json:"code"`
	Detail string `json:"detail,omitempty"`
}

// Thread is the conversation a run belongs to, derived on the server from
// the previous run's ledger when the run starts.
type Thread struct {
	// RootRunID is the conversation's first run; Position is this run's
	// place in it (1 for a run of its own).
	RootRunID string `json:"rootRunId"`
	Position  int    `json:"position"`
	// Chain lists the runs before this one, oldest first (at most
	// MaxThreadSteps), each with its objective: every node carries its own
	// prefix, so following the newest run yields the whole conversation.
	Chain []ThreadStep `json:"chain,omitempty"`
	// Context is the fenced block the model reads: the spine (earlier
	// objectives) and the newest run's evidence, bounded.
	Context string `json:"context,omitempty"`
	// Omitted says what the bounds left out, in a sentence; empty when
	// nothing was.
	Omitted string `json:"omitted,omitempty"`
	// Declined, when set, says the run proceeds without the conversation:
	// "unavailable", "disabled" or "error"; DeclinedReason says why.
	Declined       string `json:"declined,omitempty"`
	DeclinedReason string `json:"declinedReason,omitempty"`
}

// ThreadStep is one earlier run of a conversation.
type ThreadStep struct {
	RunID     string `json:"runId"`
	Objective string `json:"objective"`
}

// The bounds of a run's conversation context.
const (
	ThreadContextMaxChars   = 4000
	ThreadSpineShare        = 0.75
	MaxThreadSteps          = 20
	ThreadObjectiveMaxChars = 200
)

// The reasons a thread is declined.
const (
	ThreadUnavailable = "unavailable"
	ThreadDisabled    = "disabled"
	ThreadError       = "error"
)

// StatementDrafted records a statement the model drafted for run_read_query,
// with its canonical fingerprint (the repair ledger's key).
type StatementDrafted struct {
	StepID      string `json:"stepId"`
	SQL         string `json:"sql"`
	Fingerprint string `json:"fingerprint"`
	Reason      string `json:"reason,omitempty"`
}

// PlanStatementDrafted records the statement a planning run hands the user:
// read out of the model's final text, classified by the guard (never
// executed, never blocked) and checked against the run's inventory.
type PlanStatementDrafted struct {
	Turn int    `json:"turn"`
	SQL  string `json:"sql"`
	// Dialect is the connection's engine id, the fence tag the statement
	// was read from.
	Dialect Engine `json:"dialect"`
	// ReadOnly is the guard's classification; Refusal, when set, is what
	// the guard would refuse it with (code, reason, fix).
	ReadOnly bool     `json:"readOnly"`
	Refusal  *Refusal `json:"refusal,omitempty"`
	// Identifiers is the check of the names it reads against the inventory.
	Identifiers IdentifierCheck `json:"identifiers"`
	Note        string          `json:"note,omitempty"`
}

// IdentifierCheck is what comparing a drafted statement's names with the
// run's inventory found. An empty Unknown list with Status "checked" means
// nothing recognised was missing, never that the statement is sound.
type IdentifierCheck struct {
	// Status is "checked", "no-inventory" (the run captured none: nothing
	// was compared) or "unread" (the guard could not read the statement).
	Status           string   `json:"status"`
	UnknownRelations []string `json:"unknownRelations,omitempty"`
	UnknownColumns   []string `json:"unknownColumns,omitempty"`
	// ColumnsChecked says whether columns were compared too.
	ColumnsChecked bool `json:"columnsChecked"`
}

// The identifier check statuses.
const (
	IdentifiersChecked     = "checked"
	IdentifiersNoInventory = "no-inventory"
	IdentifiersUnread      = "unread"
)

// ToolCall identifies the model call a tool entry answers, so a resumed drive
// can rebuild the transcript exactly.
type ToolCall struct {
	// Turn is the model turn (1-based) that asked for the tool.
	Turn int `json:"turn"`
	// CallID is the model's own id for the call.
	CallID string `json:"callId"`
	Tool   string `json:"tool"`
	// Arguments are the arguments as the model sent them.
	Arguments json.RawMessage `json:"arguments"`
	// Usage is the token usage of the model turn that asked for the call,
	// carried by the first entry the turn wrote; a turn is counted once.
	Usage *Usage `json:"usage,omitempty"`
	// Text is the prose the model wrote beside the turn's calls, carried by
	// the turn's first entry, so the transcript rebuilt from the ledger shows
	// the model its own reasoning.
	Text string `json:"text,omitempty"`
	// ModelMs is how long the model took to answer the turn, on the turn's
	// first entry: the report reserve grows with the slowest turn.
	ModelMs int64 `json:"modelMs,omitempty"`
	// Signature is the vendor's opaque token for the call (Gemini's
	// thoughtSignature), sent back with the call on every later turn.
	Signature string `json:"signature,omitempty"`
}

// ToolInvoked is appended, and acknowledged, before the tool's effect.
type ToolInvoked struct {
	ToolCall
	// StepID is derived from the tool name and the arguments that reach the
	// database: the same call asked twice is the same step.
	StepID string `json:"stepId"`
	// CorrelationID names the artifact this step will produce.
	CorrelationID string `json:"correlationId,omitempty"`
	// Normalised lists what was read leniently in the arguments as sent
	// (ToolCall.Arguments keeps them verbatim), e.g. "\"query\" read as \"sql\"".
	Normalised []string `json:"normalised,omitempty"`
}

// StepOutcome says how a step settled.
type StepOutcome string

// The step outcomes.
const (
	// OutcomeOK: the tool ran and produced its result.
	OutcomeOK StepOutcome = "ok"
	// OutcomeError: the database refused or failed the statement.
	OutcomeError StepOutcome = "error"
	// OutcomeIndeterminate: the step was invoked and no outcome was recorded
	// before its drive ended; it may or may not have run and is never re-run.
	OutcomeIndeterminate StepOutcome = "indeterminate"
)

// ToolCompleted settles an invoked step.
type ToolCompleted struct {
	ToolCall
	StepID  string      `json:"stepId"`
	Outcome StepOutcome `json:"outcome"`
	// Artifact summarises the stored result (ok outcomes of reading tools).
	Artifact *ArtifactSummary `json:"artifact,omitempty"`
	// DBError classifies a database failure (error outcomes).
	DBError *DBError `json:"dbError,omitempty"`
	// DurationMs is database time spent, charged to the run's budget.
	DurationMs int64 `json:"durationMs"`
	// Fingerprint is the statement's canonical fingerprint, as the guard read
	// it (reads only): the key under which repairs are counted.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Content is exactly what the model read as the tool's result.
	Content string `json:"content"`
	// Plan is the summary of an estimating plan (inspect_plan).
	Plan *PlanSummary `json:"plan,omitempty"`
}

// ToolRefused records a tool call refused before any effect: unknown tool,
// malformed arguments, a guard or policy refusal, an exhausted budget, a
// citation the run cannot resolve. A refusal consumes no repair attempt.
type ToolRefused struct {
	ToolCall
	StepID  string `json:"stepId,omitempty"`
	Code    Code   `json:"code"`
	Reason  string `json:"reason"`
	Fix     string `json:"fix,omitempty"`
	Content string `json:"content"`
	// Normalised lists what was read leniently in the call as sent, e.g.
	// "call read from the model's text (a <tool_call> block)".
	Normalised []string `json:"normalised,omitempty"`
}

// EvidenceSource says what kind of thing a claim cites.
type EvidenceSource string

// The evidence sources.
const (
	EvidenceArtifact        EvidenceSource = "artifact"
	EvidenceContextSnapshot EvidenceSource = "context-snapshot"
)

// EvidenceRef is one citation: an artifact this run produced, or the context
// snapshot it captured.
type EvidenceRef struct {
	Source        EvidenceSource `json:"source"`
	CorrelationID string         `json:"correlationId,omitempty"`
	Fingerprint   string         `json:"fingerprint,omitempty"`
}

// Claim is one finding of a report and the evidence it rests on.
type Claim struct {
	Text     string        `json:"text"`
	Evidence []EvidenceRef `json:"evidence"`
}

// ReportComposed is the run's report; every citation was verified against the
// run's own ledger before it was appended.
type ReportComposed struct {
	ToolCall
	Claims []Claim `json:"claims"`
	// Normalised lists what was read leniently in the arguments as sent
	// (ToolCall.Arguments keeps them verbatim), e.g. "claims sent as a JSON
	// string", "evidence 1.1 sent as a bare id".
	Normalised []string `json:"normalised,omitempty"`
}

// ClosingStatement records prose the model wrote without calling a tool.
type ClosingStatement struct {
	Turn int    `json:"turn"`
	Text string `json:"text"`
	// Usage is the token usage of the turn that said it.
	Usage *Usage `json:"usage,omitempty"`
	// ModelMs is how long the model took to answer the turn.
	ModelMs int64 `json:"modelMs,omitempty"`
	// Refused is set when the turn was a tool call that could not be read —
	// cut at the output limit, one the vendor called malformed, or written
	// as text that starts a call and does not parse — rather than prose:
	// nothing ran, and the model is shown this refusal, not the prose nudge.
	Refused *Refusal `json:"refused,omitempty"`
}

// PlanComparison records a comparison of two estimating plans this run
// read. The model names only the two artifacts; the statements and the
// summaries come from the ledger, and Summary is the server's sentence.
type PlanComparison struct {
	ToolCall
	// Before and After are the two plans' correlation ids, as the model
	// named them.
	Before string `json:"before"`
	After  string `json:"after"`
	// BeforeSQL, AfterSQL and the plans are read from the ledger.
	BeforeSQL  string       `json:"beforeSql,omitempty"`
	AfterSQL   string       `json:"afterSql,omitempty"`
	BeforePlan *PlanSummary `json:"beforePlan,omitempty"`
	AfterPlan  *PlanSummary `json:"afterPlan,omitempty"`
	// Summary says what changed between the two, in the server's words,
	// and that both are estimates.
	Summary string `json:"summary"`
	// Content is exactly what the model read as the tool's result.
	Content string `json:"content,omitempty"`
	// Normalised lists what was read leniently in the arguments as sent
	// (ToolCall.Arguments keeps them verbatim) and in the tool's name.
	Normalised []string `json:"normalised,omitempty"`
}

// Recommendation records a change the model recommends: recorded, never
// executed.
type Recommendation struct {
	ToolCall
	// Kind is "index" or "rewrite".
	Kind      string        `json:"kind"`
	Statement string        `json:"statement"`
	Rationale string        `json:"rationale"`
	Evidence  []EvidenceRef `json:"evidence"`
	// Diagnosed lists the cited artifacts that are estimating plans of this
	// run (an index recommendation rests on the plan it diagnosed).
	Diagnosed []string `json:"diagnosed,omitempty"`
	// Content is exactly what the model read as the tool's result.
	Content string `json:"content,omitempty"`
	// Normalised lists what was read leniently in the arguments as sent
	// (ToolCall.Arguments keeps them verbatim) and in the tool's name.
	Normalised []string `json:"normalised,omitempty"`
}

// The recommendation kinds.
const (
	RecommendIndex   = "index"
	RecommendRewrite = "rewrite"
)

// TableProfiled records a table profile the server composed: counts and
// findings, never a value from the table.
type TableProfiled struct {
	ToolCall
	// Table is the table as the model spelled it; Profile.Table what it
	// resolved to.
	Table         string        `json:"table"`
	Depth         string        `json:"depth"`
	CorrelationID string        `json:"correlationId"`
	StepID        string        `json:"stepId,omitempty"`
	Profile       *TableProfile `json:"profile,omitempty"`
}

// AnswerComposed records which result is the run's answer and how to show
// it. SQL comes from the ledger (the statement that produced the result),
// never from the model.
type AnswerComposed struct {
	ToolCall
	CorrelationID string       `json:"correlationId"`
	SQL           string       `json:"sql,omitempty"`
	Fingerprint   string       `json:"fingerprint,omitempty"`
	Presentation  Presentation `json:"presentation"`
	// Chart is the server's decision of how the chart is drawn (series,
	// points not drawn and why); set exactly when Presentation is a chart.
	// Ledgers recorded before the decision was kept have none.
	Chart *ChartDecision `json:"chart,omitempty"`
	// Handover is what the editor does with it; HandoverWarning says why
	// the gate declined (present exactly when Handover is applied).
	Handover        Handover `json:"handover,omitempty"`
	HandoverWarning string   `json:"handoverWarning,omitempty"`
	// Content is exactly what the model read as the tool's result.
	Content string `json:"content,omitempty"`
	// Normalised lists what was read leniently in the arguments as sent
	// (ToolCall.Arguments keeps them verbatim) and in the tool's name.
	Normalised []string `json:"normalised,omitempty"`
}

// StopReason says why a run stopped.
type StopReason string

// The stop reasons.
const (
	StopReportComposed   StopReason = "report-composed"
	StopTurnLimit        StopReason = "turn-limit"
	StopStatementLimit   StopReason = "statement-limit"
	StopDeadlineExceeded StopReason = "deadline-exceeded"
	StopCancelled        StopReason = "cancelled"
	StopModelStopped     StopReason = "model-stopped"
	StopFailed           StopReason = "failed"
	// StopRepeatedCall: the model sent the same call (or had the same call
	// refused) three times; the run was stopped rather than spend its turns.
	StopRepeatedCall StopReason = "repeated-call"
	// StopQuestion: the model asked the user a question instead of
	// answering; RunFinished.Question holds it, and continuing the
	// conversation answers it.
	StopQuestion StopReason = "question-asked"
)

// FailureReason classifies why a run failed. It is chosen from an error's
// type, never its message; the message goes to the log only.
type FailureReason string

// The failure reasons.
const (
	ReasonModelUnavailable     FailureReason = "model-unavailable"
	ReasonModelRateLimited     FailureReason = "model-rate-limited"
	ReasonModelUnauthorized    FailureReason = "model-unauthorized"
	ReasonModelNotFound        FailureReason = "model-not-found"
	ReasonModelContextExceeded FailureReason = "model-context-exceeded"
	ReasonModelTimeout         FailureReason = "model-timeout"
	ReasonExecutorUnavailable  FailureReason = "executor-unavailable"
	ReasonInternal             FailureReason = "internal"
)

// VerdictOutcome is whether a run answered.
type VerdictOutcome string

// The verdict outcomes.
const (
	VerdictAnswered   VerdictOutcome = "answered"
	VerdictUnanswered VerdictOutcome = "unanswered"
	VerdictCancelled  VerdictOutcome = "cancelled"
)

// GoalVerdict is the answered rule's judgement of a run: a pure fold over its
// ledger.
type GoalVerdict struct {
	Outcome VerdictOutcome `json:"outcome"`
	// Rule is the versioned rule id, e.g. "agent-investigation.2".
	Rule string `json:"rule"`
	// Unmet lists the shortfall codes ("no-report", "empty-evidence").
	Unmet []string `json:"unmet"`
	// Claims holds what the verifier found of each claim's figures, one
	// entry per claim that states any, in claim order.
	Claims []ClaimCheck `json:"claims,omitempty"`
}

// FigureStatus is what the verifier found of one figure a claim states.
type FigureStatus string

// The figure statuses.
const (
	// FigureFound: the figure is among the values the cited results showed
	// the model, at the precision the claim wrote it.
	FigureFound FigureStatus = "found"
	// FigureDerived: the figure is a sum, difference, ratio or percentage
	// of values the cited results showed.
	FigureDerived FigureStatus = "derived"
	// FigureUnverified: the figure is in none of the claim's evidence.
	FigureUnverified FigureStatus = "figure-unverified"
)

// ClaimCheck is the verifier's check of one claim's figures.
type ClaimCheck struct {
	// Claim is the claim's position in the report, from 1.
	Claim   int           `json:"claim"`
	Figures []FigureCheck `json:"figures"`
}

// FigureCheck is one figure of a claim and where it was found.
type FigureCheck struct {
	// Text is the figure as the claim wrote it ("826.65", "12 %", "2013-03").
	Text   string       `json:"text"`
	Status FigureStatus `json:"status"`
	// Source is the cited id it was found in or derived from, e.g. "r2".
	Source string `json:"source,omitempty"`
	// How says how a derived figure follows, e.g. "826.65 - 700.21".
	How string `json:"how,omitempty"`
}

// RunFinished ends a run. Nothing is appended after it.
type RunFinished struct {
	Status     RunStatus     `json:"status"`
	StopReason StopReason    `json:"stopReason"`
	Reason     FailureReason `json:"reason,omitempty"`
	// GoalVerdict is absent when no verifier ran (a run that never entered its loop).
	GoalVerdict *GoalVerdict `json:"goalVerdict,omitempty"`
	// Detail is one sentence for the user; never an engine's or vendor's text.
	Detail string `json:"detail,omitempty"`
	// Question is what the model asked the user (StopQuestion), as it
	// wrote it; the user answers by continuing the conversation.
	Question string `json:"question,omitempty"`
}
