package api

import "github.com/sondehq/sonde/contracts"

// HandoverPath is the path of POST /api/agent/runs/{id}/handover: the
// replay of a run's auto-executed answer in the user's editor. The request
// carries no body; the statement and the connection come from the run's
// ledger.
func HandoverPath(runID string) string { return RunPath(runID) + "/handover" }

// HandoverResponse answers POST /api/agent/runs/{id}/handover with 200: the
// replayed statement's rows, in POST /api/query's shape, and which statement
// ran where.
type HandoverResponse struct {
	QueryResponse
	RunID        string `json:"runId"`
	ConnectionID string `json:"connectionId"`
	// SQL is the statement replayed, as the run's answer-composed event
	// recorded it.
	SQL string `json:"sql"`
}

// Error codes of the handover route.
const (
	// CodeHandoverNoBody: the request carried a body; the route takes none,
	// because the statement comes from the run's ledger only.
	CodeHandoverNoBody = contracts.CodeHandoverNoBody
	// CodeNoAnswer: the run presented no answer (or has not yet), so there
	// is nothing to replay.
	CodeNoAnswer = contracts.CodeNoAnswer
	// CodeNotAutoExecuted: the run's answer was not auto-executed (the
	// run was opened without autoExecute, or the gate declined); the message
	// carries the gate's warning.
	CodeNotAutoExecuted = contracts.CodeNotAutoExecuted
	// CodeConnectionGone: the run's connection is no longer served here.
	CodeConnectionGone = contracts.CodeConnectionGone
	// CodeConnectionChanged: the run's connection id now reaches another
	// database (its descriptor's identity differs from the one the run
	// recorded), so the replay would run where the run never read.
	CodeConnectionChanged = contracts.CodeConnectionChanged
	// CodeConnectionUnverified: the run recorded no connection identity (it
	// predates identities), or the connection's executor publishes none, so
	// nothing shows the replay reaches the database the run read.
	CodeConnectionUnverified = contracts.CodeConnectionUnverified
)
