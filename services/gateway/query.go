package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/oklog/ulid/v2"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/natsx"
	"github.com/sondehq/sonde/services/gateway/api"
)

// queryGrace is how long past the statement's own timeout the gateway waits
// for the executor's reply.
const queryGrace = 5 * time.Second

// query answers POST /api/query: one guarded read under the inspect profile,
// sent to the executor of the connection's engine, its rows read back from
// the artifact store. A refusal is 422 with the guard's code, reason and fix;
// a database error 502 (504 for a timeout) with code contracts.DBErrorClass.Code.
func (g *Gateway) query(c echo.Context) error {
	if _, err := actor(c); err != nil {
		return err
	}
	var req api.QueryRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	switch {
	case req.Limit < 0 || req.Limit > api.QueryMaxLimit:
		return badRequest(contracts.CodeBadRequest, fmt.Sprintf("limit %d is outside 1 to %d", req.Limit, api.QueryMaxLimit),
			"leave it out for 200 rows, or ask for at most 1,000")
	case req.TimeoutMs < 0 || req.TimeoutMs > api.QueryMaxTimeoutMs:
		return badRequest(contracts.CodeBadRequest, fmt.Sprintf("timeoutMs %d is outside 1 to %d", req.TimeoutMs, api.QueryMaxTimeoutMs),
			"leave it out for 5 s, or ask for at most 10,000 ms")
	}
	ctx := c.Request().Context()
	d, err := g.descriptor(ctx, req.ConnectionID)
	if err != nil {
		return err
	}
	// The request id names the read to the executor, so that it can be
	// cancelled there when the client hangs up.
	ereq := contracts.ExecRequest{StepID: newQueryID(), ConnectionID: d.ID, Profile: contracts.ProfileInspect, SQL: req.SQL,
		Params: req.Params, MaxRows: req.Limit, TimeoutMs: req.TimeoutMs}
	reply, err := g.exec(ctx, d.Engine, ereq)
	if err != nil {
		return err
	}
	if err := replyError(c, reply); err != nil {
		return err
	}
	art, err := g.readArtifact(ctx, reply.Artifact.CorrelationID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, queryResponse(art, reply))
}

// replyError maps an executor reply that is not ok onto the HTTP answer the
// direct-inspection routes give it: a refusal 422 with the guard's code (503
// with Retry-After when the same request may succeed later: not the
// statement's fault; 400 when the request itself is wrong, such as its
// parameters: bad_request), a database error 502 (504 for a timeout); nil
// for an ok reply.
func replyError(c echo.Context, reply contracts.ExecReply) error {
	switch reply.Status {
	case contracts.ExecRefused:
		r := reply.Refusal
		switch r.Code {
		case contracts.RefuseExecutorBusy, contracts.RefuseConnectionUnavailable:
			c.Response().Header().Set("Retry-After", "5")
			return fail(http.StatusServiceUnavailable, r.Code, r.Message, r.Fix)
		case contracts.RefuseBadRequest:
			return badRequest(r.Code, r.Message, r.Fix)
		}
		return fail(http.StatusUnprocessableEntity, r.Code, r.Message, r.Fix)
	case contracts.ExecError:
		status := http.StatusBadGateway
		if reply.Error.Class == contracts.DBTimeout {
			status = http.StatusGatewayTimeout
		}
		return fail(status, reply.Error.Class.Code(), reply.Error.Message, dbErrorFix(reply.Error.Class))
	}
	return nil
}

// readArtifact reads back a direct (run-less) result the executor stored.
func (g *Gateway) readArtifact(ctx context.Context, correlationID string) (contracts.Artifact, error) {
	st, err := g.artifactStore(ctx)
	if err != nil {
		g.log.Warn("artifact store unavailable", "err", err)
		return contracts.Artifact{}, unavailable("the artifact store cannot be reached", "retry shortly; check NATS")
	}
	art, err := st.Get(ctx, "", correlationID)
	if err != nil {
		g.log.Warn("direct result unreadable", "correlation", correlationID, "err", err)
		return contracts.Artifact{}, unavailable("the result was stored but cannot be read back", "retry the request")
	}
	return art, nil
}

// queryResponse is a direct read's answer: the stored rows (a list, never
// null) and how the read was bounded.
func queryResponse(art contracts.Artifact, reply contracts.ExecReply) api.QueryResponse {
	rows := art.Data
	if rows == nil {
		rows = [][]any{}
	}
	return api.QueryResponse{Columns: art.Columns, Rows: rows, RowCount: len(rows),
		Truncated: art.Truncated, TruncatedBy: art.TruncatedBy, DurationMs: reply.DurationMs}
}

// exec sends one read to the executor of engine e and decodes its reply.
// Executors answer at most once: a request that times out may have run.
// One that reached no executor did not: 503, which a client may send again;
// one the executor received and never answered is 504
// executor_unanswered, and the executor is told to stop it.
func (g *Gateway) exec(ctx context.Context, e contracts.Engine, req contracts.ExecRequest) (contracts.ExecReply, error) {
	return g.execOp(ctx, e, contracts.OpRead, req)
}

// execOp sends one request for operation op to the executor of engine e.
func (g *Gateway) execOp(ctx context.Context, e contracts.Engine, op contracts.ExecOp, req contracts.ExecRequest) (contracts.ExecReply, error) {
	var reply contracts.ExecReply
	wait := time.Duration(req.TimeoutMs)*time.Millisecond + queryGrace
	if req.TimeoutMs == 0 {
		wait = time.Duration(api.QueryMaxTimeoutMs)*time.Millisecond + queryGrace
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	subject := contracts.ExecSubject(e, op)
	err := natsx.Request(ctx, g.nc, subject, req, &reply)
	if ctx.Err() != nil && req.StepID != "" {
		// Nobody will read the answer (the client hung up, or we stopped
		// waiting): stop the statement at the database rather than let it
		// run to its own timeout.
		g.cancelExec(e, req)
	}
	switch {
	case errors.Is(err, natsx.ErrNotDelivered):
		return reply, unavailable(fmt.Sprintf("no %s executor is running: the statement did not run", e),
			"start one (sonde serve, or --services executor-"+string(e)+"), then send the request again")
	case errors.Is(err, natsx.ErrUnanswered) && errors.Is(err, context.DeadlineExceeded):
		return reply, fail(http.StatusGatewayTimeout, api.CodeExecutorUnanswered,
			fmt.Sprintf("the %s executor received the statement and did not answer within %s: it may have run, and the executor was told to stop it", e, wait),
			"narrow the query, or retry (a read changes nothing)")
	case errors.Is(err, natsx.ErrUnanswered):
		g.log.Warn("exec request failed", "subject", subject, "err", err)
		return reply, unavailable("the executor cannot be reached", "retry shortly; check NATS")
	case err != nil:
		return reply, fmt.Errorf("gateway: %s reply: %w", subject, err)
	}
	if reply.Status == contracts.ExecRefused && reply.Refusal == nil || reply.Status == contracts.ExecError && reply.Error == nil ||
		reply.Status == contracts.ExecOK && reply.Artifact == nil {
		return reply, fmt.Errorf("gateway: malformed %s reply (status %q)", subject, reply.Status)
	}
	return reply, nil
}

// cancelExec tells every executor of engine e to stop the operation req
// named. Best effort: a lost cancel leaves the statement to its timeout.
func (g *Gateway) cancelExec(e contracts.Engine, req contracts.ExecRequest) {
	data, err := json.Marshal(contracts.ExecCancel{RunID: req.RunID, StepID: req.StepID})
	if err == nil {
		err = g.nc.Publish(contracts.ExecCancelSubject(e), data)
	}
	if err != nil {
		g.log.Warn("cancel exec", "step", req.StepID, "err", err)
		return
	}
	g.log.Info("query abandoned; cancel sent", "step", req.StepID, "engine", e)
}

// newQueryID names one direct read: the step id of its ExecRequest.
func newQueryID() string { return "q" + strings.ToLower(ulid.Make().String()) }

// dbErrorFix says what to do about a database error of class c.
func dbErrorFix(c contracts.DBErrorClass) string {
	switch c {
	case contracts.DBSyntax:
		return "write the statement in the connection's dialect"
	case contracts.DBMissingObject:
		return "GET " + api.PathConnections + " names the connections; read the schema for the tables and columns"
	case contracts.DBTimeout:
		return "narrow the query (a tighter WHERE, an indexed column) or raise timeoutMs up to " + fmt.Sprint(api.QueryMaxTimeoutMs)
	case contracts.DBResource:
		return "retry in a moment, or narrow the query"
	case contracts.DBPermission:
		return "read only what the connection allows"
	}
	return "see the message"
}
