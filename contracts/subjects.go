package contracts

import "strings"

// Streams, buckets and object stores.
const (
	// LedgerStream holds every run's ledger, one subject per run.
	LedgerStream = "SONDE_LEDGER"
	// LedgerSubjects is the stream's subject filter; anyone permitted may
	// subscribe to it to watch every run.
	LedgerSubjects = "sonde.ledger.>"
	// HistoryStream holds the per-actor run history: a HistoryPointer when a
	// run starts (status queued) and another when it finishes.
	HistoryStream = "SONDE_HISTORY"
	// HistorySubjects is the history stream's subject filter.
	HistorySubjects = "sonde.history.>"
	// ConnectionsBucket is the KV bucket of connection descriptors (no secrets),
	// written by executors.
	ConnectionsBucket = "sonde_connections"
	// LeasesBucket is the KV bucket of drive claims, written by orchestrators.
	LeasesBucket = "sonde_leases"
	// ArtifactsBucket is the object store of full results, written by executors.
	ArtifactsBucket = "sonde_artifacts"
)

// Request/reply subjects.
const (
	// SubjectRunStart starts or resumes a run. Request: StartRun; reply: StartRunReply.
	SubjectRunStart = "sonde.cmd.runs.start"
	// SubjectRunCancel asks a run to stop. Request: CancelRun; reply: CancelRunReply.
	SubjectRunCancel = "sonde.cmd.runs.cancel"
	// SubjectRunHealth asks an orchestrator whether it can start and drive
	// runs. Request: empty; reply: RunHealth.
	SubjectRunHealth = "sonde.cmd.runs.health"
	// SubjectModelTurn asks for one model call. Request: ModelTurnRequest; reply: ModelTurnReply.
	SubjectModelTurn = "sonde.model.turn"
	// SubjectModelProbe asks for a capability probe of the configured model.
	SubjectModelProbe = "sonde.model.probe"
)

// Queue groups: every replica of a service subscribes in its group so that
// one request reaches exactly one replica.
const (
	QueueOrchestrator = "orchestrator"
	QueueModelTurn    = "modelturn"
	// QueueExecutorPrefix is followed by the engine name: "executor-sqlite".
	QueueExecutorPrefix = "executor-"
)

// LedgerSubject is the subject of one run's ledger.
func LedgerSubject(runID string) string { return "sonde.ledger." + runID }

// RunIDFromLedgerSubject returns the run id of a ledger subject, or "" when
// the subject is not one.
func RunIDFromLedgerSubject(subject string) string {
	id, ok := strings.CutPrefix(subject, "sonde.ledger.")
	if !ok || id == "" || strings.ContainsAny(id, ".*>") {
		return ""
	}
	return id
}

// HistorySubject is the subject of one actor's run history. Payload:
// HistoryPointer.
func HistorySubject(actorKey string) string { return "sonde.history." + actorKey }

// HistoryPointer is one entry of an actor's run history: the orchestrator
// publishes one when it starts a run (status queued) and one when the run
// finishes. It points at a ledger and copies nothing else; the ledger stays
// the truth about the run, and a reader checks the run's actor there.
type HistoryPointer struct {
	RunID  string    `json:"runId"`
	Status RunStatus `json:"status"`
}

// ModelDeltaSubject carries the text deltas of one run's model turns as they
// stream. Payload: ModelDelta.
func ModelDeltaSubject(runID string) string { return "sonde.model.delta." + runID }

// ExecSubject is the subject of one executor operation on one engine.
func ExecSubject(engine Engine, op ExecOp) string {
	return "sonde.exec." + string(engine) + "." + string(op)
}

// ExecSubjects is the wildcard an executor of one engine serves.
func ExecSubjects(engine Engine) string { return "sonde.exec." + string(engine) + ".*" }

// ExecCancelSubject carries ExecCancel to every executor of one engine: a
// plain publish that each replica receives (no queue group), so whichever
// one runs the operation stops it.
func ExecCancelSubject(engine Engine) string { return "sonde.exec." + string(engine) + ".cancel" }

// ValidRunID reports whether id can name a run: it becomes a subject token,
// so it must pass CheckID (non-empty, at most MaxIDLength bytes of letters,
// digits, '-' and '_').
func ValidRunID(id string) bool { return CheckID(IDRun, id) == nil }
