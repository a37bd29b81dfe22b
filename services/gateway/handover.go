package gateway

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/oklog/ulid/v2"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/api"
)

// handoverTimeoutMs is the statement time the replay is granted: none. It is
// spelled as PostgreSQL's own 32-bit ceiling (a little over 24 days) because
// the gateway waits for the executor as long as the grant; the executor's
// agent-handover profile sets no statement timeout whatever it is granted.
// The replay ends when it answers or when the caller hangs up, which cancels
// it at the database.
const handoverTimeoutMs = math.MaxInt32

// handover answers POST /api/agent/runs/{id}/handover: the statement of the
// run's auto-executed answer, run again under the agent-handover profile
// (read-only at the database, 500 rows refused rather than truncated, no
// statement timeout) on the run's own connection. Nothing the caller sends
// reaches the database: the request has no body, the statement comes from
// the run's answer-composed event and the connection from its run-started
// header, and only while that connection still reaches the database the
// header recorded (sameDatabase). The route honours the gate the run
// applied rather than deciding again: only an answer recorded as
// auto-executed is replayed. It writes no
// ledger event (the run may have finished, and its ledger records what the
// run did); the replay is logged.
func (g *Gateway) handover(c echo.Context) error {
	a, err := actor(c)
	if err != nil {
		return err
	}
	if err := refuseBody(c.Request()); err != nil {
		return err
	}
	ctx := c.Request().Context()
	runID := c.Param("id")
	rec, err := g.ownedRun(ctx, a, runID)
	if err != nil {
		return err
	}
	ans := rec.Answer
	switch {
	case ans == nil:
		return fail(http.StatusConflict, api.CodeNoAnswer,
			fmt.Sprintf("run %s presented no answer (%s), so there is nothing to hand over", runID, rec.Status),
			"hand over a data-analysis run that presented its answer; GET "+api.RunPath(runID)+" shows the run")
	case ans.Handover != contracts.HandoverAutoExecuted:
		return fail(http.StatusConflict, api.CodeNotAutoExecuted, notAutoExecuted(runID, ans),
			"place the answer's statement in the editor and run it yourself (POST "+api.PathQuery+")")
	case strings.TrimSpace(ans.SQL) == "":
		return fail(http.StatusConflict, api.CodeNoAnswer,
			fmt.Sprintf("run %s's answer records no statement to replay", runID), "GET "+api.RunPath(runID)+" shows the answer")
	}
	d, err := g.descriptor(ctx, rec.ConnectionID)
	var he *httpError
	if errors.As(err, &he) && he.body.Code == contracts.CodeUnknownConnection {
		return fail(http.StatusConflict, api.CodeConnectionGone,
			fmt.Sprintf("run %s read connection %q, which this server no longer serves", runID, rec.ConnectionID),
			"start the executor that serves it, then retry")
	}
	if err != nil {
		return err
	}
	if err := sameDatabase(rec, d); err != nil {
		return err
	}
	ereq := contracts.ExecRequest{StepID: newHandoverID(), ConnectionID: d.ID, Profile: contracts.ProfileAgentHandover,
		SQL: ans.SQL, TimeoutMs: handoverTimeoutMs}
	log := g.log.With("run", runID, "actor", a.ID, "connection", d.ID, "step", ereq.StepID)
	reply, err := g.exec(ctx, d.Engine, ereq)
	if err != nil {
		log.Warn("handover not answered", "err", err)
		return err
	}
	if err := replyError(c, reply); err != nil {
		log.Info("handover refused", "status", reply.Status, "err", err)
		return err
	}
	art, err := g.readArtifact(ctx, reply.Artifact.CorrelationID)
	if err != nil {
		return err
	}
	res := queryResponse(art, reply)
	log.Info("handover replayed", "rows", res.RowCount, "db_ms", reply.DurationMs, "fingerprint", reply.Fingerprint)
	return c.JSON(http.StatusOK, api.HandoverResponse{QueryResponse: res, RunID: runID, ConnectionID: d.ID, SQL: ans.SQL})
}

// sameDatabase refuses a replay that cannot be shown to reach the database
// the run read: the run's connection id may have been repointed since (the
// operator edited the executor's configuration), and the gate's evidence —
// the run's own read, its plan, its time — is about the database the run
// recorded. It fails closed: a run recorded before identities existed, or a
// descriptor without one, is refused too.
func sameDatabase(rec contracts.Record, d contracts.ConnectionDescriptor) error {
	switch {
	case rec.ConnectionIdentity == "" || d.Identity == "":
		return fail(http.StatusConflict, api.CodeConnectionUnverified,
			fmt.Sprintf("run %s cannot be shown to replay on the database it read: %s", rec.RunID, unverified(rec, d)),
			"run the answer's statement yourself (POST "+api.PathQuery+") if it still applies")
	case rec.ConnectionIdentity != d.Identity:
		return fail(http.StatusConflict, api.CodeConnectionChanged,
			fmt.Sprintf("connection %q reaches another database than when run %s read it (its host, port, database, role or file changed), so the answer's statement is not replayed there", d.ID, rec.RunID),
			"ask again on the connection as it is now, or run the statement yourself (POST "+api.PathQuery+")")
	}
	return nil
}

func unverified(rec contracts.Record, d contracts.ConnectionDescriptor) string {
	if rec.ConnectionIdentity == "" {
		return "the run recorded no identity of its connection's database (it was recorded before identities were)"
	}
	return fmt.Sprintf("the executor serving connection %q publishes no identity of its database", d.ID)
}

// notAutoExecuted says why an answer is not replayed, in the gate's words
// when the gate declined it.
func notAutoExecuted(runID string, ans *contracts.AnswerComposed) string {
	switch {
	case ans.Handover == contracts.HandoverApplied && ans.HandoverWarning != "":
		return fmt.Sprintf("run %s's answer was not auto-executed: %s", runID, ans.HandoverWarning)
	case ans.Handover == contracts.HandoverApplied:
		return fmt.Sprintf("run %s's answer was not auto-executed: the gate declined it", runID)
	}
	return fmt.Sprintf("run %s's answer was not auto-executed: the run was not opened with autoExecute", runID)
}

// refuseBody refuses a request that carries a body: nothing a caller sends
// may reach the replay.
func refuseBody(r *http.Request) error {
	has := r.ContentLength > 0
	if !has && r.Body != nil && r.Body != http.NoBody {
		var b [1]byte
		n, _ := io.ReadFull(r.Body, b[:])
		has = n > 0
	}
	if has {
		return badRequest(api.CodeHandoverNoBody, "the handover request carries a body; it takes none",
			"send POST with an empty body: the statement and the connection come from the run's ledger")
	}
	return nil
}

// newHandoverID names one replay: the step id of its ExecRequest, so that
// it can be cancelled at the database when the caller hangs up.
func newHandoverID() string { return "h" + strings.ToLower(ulid.Make().String()) }
