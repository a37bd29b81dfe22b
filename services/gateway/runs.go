package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/oklog/ulid/v2"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/natsx"
	"github.com/sondehq/sonde/pkg/policy"
	"github.com/sondehq/sonde/services/gateway/api"
)

// startRun answers POST /api/agent/runs.
func (g *Gateway) startRun(c echo.Context) error {
	a, err := actor(c)
	if err != nil {
		return err
	}
	var req api.StartRunRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	key := c.Request().Header.Get(api.HeaderIdempotencyKey)
	if err := checkIdempotencyKey(key); err != nil {
		return err
	}
	resp, replayed, err := g.start(c.Request().Context(), a, req, key)
	if err != nil {
		return err
	}
	if replayed {
		c.Response().Header().Set(api.HeaderIdempotentReplayed, "true")
	}
	c.Response().Header().Set(echo.HeaderLocation, api.RunPath(resp.RunID))
	return c.JSON(http.StatusAccepted, resp)
}

// maxIdempotencyKey bounds an Idempotency-Key header.
const maxIdempotencyKey = 255

// checkIdempotencyKey refuses a key that is too long or not printable ASCII;
// no key is fine.
func checkIdempotencyKey(key string) error {
	if len(key) > maxIdempotencyKey {
		return badRequest(contracts.CodeBadRequest,
			fmt.Sprintf("the %s header is %d bytes, more than %d", api.HeaderIdempotencyKey, len(key), maxIdempotencyKey),
			"send a shorter key, e.g. a UUID")
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return badRequest(contracts.CodeBadRequest,
				fmt.Sprintf("the %s header holds a character that is not printable ASCII", api.HeaderIdempotencyKey),
				"send a key of letters, digits and punctuation, e.g. a UUID")
		}
	}
	return nil
}

// idempotentRunID derives the run id of a start sent with an idempotency
// key: the same actor and key always name the same run, so a retried start
// finds the run the first one created (the orchestrator answers it as a
// resume), and two actors' keys never meet. "k" and 26 base32 characters of
// a SHA-256: a valid subject token, distinct from "r"-prefixed ULIDs.
func idempotentRunID(actorID, key string) string {
	sum := sha256.Sum256([]byte(actorID + "\x00" + key))
	return "k" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:16]))
}

// getRun answers GET /api/agent/runs/{id} with the run's folded record.
func (g *Gateway) getRun(c echo.Context) error {
	a, err := actor(c)
	if err != nil {
		return err
	}
	rec, err := g.ownedRun(c.Request().Context(), a, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rec)
}

// cancelRun answers DELETE /api/agent/runs/{id}: the stop is requested, and
// the run honours it at its next checkpoint.
func (g *Gateway) cancelRun(c echo.Context) error {
	a, err := actor(c)
	if err != nil {
		return err
	}
	status, err := g.cancel(c.Request().Context(), a, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, api.CancelResponse{Status: status})
}

// start validates a start request and sends it to the orchestrator. With an
// idempotency key, a start that finds the key's run answers that run
// (replayed), provided it was started with the same request.
func (g *Gateway) start(ctx context.Context, a contracts.Actor, req api.StartRunRequest, key string) (api.StartRunResponse, bool, error) {
	if err := normalize(&req); err != nil {
		return api.StartRunResponse{}, false, err
	}
	runID := newRunID()
	if key != "" {
		runID = idempotentRunID(a.ID, key)
		// A retry of a start that landed answers from the ledger, whatever
		// the state of the gates below now.
		rec, err := g.ownedRun(ctx, a, runID)
		if err == nil {
			resp, err := sameStart(rec, req, key)
			return resp, err == nil, err
		}
		if !isRunNotFound(err) {
			return api.StartRunResponse{}, false, err
		}
	}
	resp, resumed, err := g.startNew(ctx, a, req, runID)
	if err != nil || !resumed || key == "" {
		return resp, false, err
	}
	// Another start with the same key got there first.
	rec, err := g.ownedRun(ctx, a, runID)
	if err != nil {
		return api.StartRunResponse{}, false, err
	}
	resp, err = sameStart(rec, req, key)
	return resp, err == nil, err
}

// sameStart answers a start whose idempotency key names an existing run: the
// run, when it was started with the same request; else a conflict.
func sameStart(rec contracts.Record, req api.StartRunRequest, key string) (api.StartRunResponse, error) {
	if rec.Objective != req.Objective || rec.ConnectionID != req.ConnectionID || rec.Mode != req.Mode ||
		rec.WorkflowType != req.WorkflowType || rec.PreviousRunID != req.PreviousRunID {
		return api.StartRunResponse{}, fail(http.StatusUnprocessableEntity, contracts.CodeIdempotencyConflict,
			fmt.Sprintf("%s %q was used for another request (run %s)", api.HeaderIdempotencyKey, key, rec.RunID),
			"send a new key with a new request; resend the same request to get run "+rec.RunID)
	}
	return api.StartRunResponse{RunID: rec.RunID, Mode: rec.Mode, WorkflowType: rec.WorkflowType}, nil
}

// isRunNotFound reports the gateway's own run_not_found answer.
func isRunNotFound(err error) bool {
	var he *httpError
	return errors.As(err, &he) && he.body.Code == contracts.CodeRunNotFound
}

// startNew passes the gates and sends the start command for runID.
func (g *Gateway) startNew(ctx context.Context, a contracts.Actor, req api.StartRunRequest, runID string) (api.StartRunResponse, bool, error) {
	if av := g.agentAvailability(ctx); !av.enabled {
		return api.StartRunResponse{}, false, fail(http.StatusServiceUnavailable, av.reason,
			"agents are not available on this server", "GET "+api.PathConfig+" says which condition failed")
	}
	if err := g.checkConnection(ctx, req.ConnectionID); err != nil {
		return api.StartRunResponse{}, false, err
	}
	if err := g.capabilityGate(ctx, req.Mode); err != nil {
		return api.StartRunResponse{}, false, err
	}
	cmd := contracts.StartRun{
		RunID:         runID,
		Mode:          req.Mode,
		WorkflowType:  req.WorkflowType,
		Objective:     req.Objective,
		ConnectionID:  req.ConnectionID,
		PreviousRunID: req.PreviousRunID,
		AutoExecute:   req.AutoExecute,
		Actor:         a,
	}
	// The orchestrator creates no run after the instant this gateway stops
	// waiting for its answer, so a start that got no answer can be settled:
	// see settleStart.
	cmd.NotAfter = time.Now().Add(runCommandTimeout)
	var reply contracts.StartRunReply
	if err := g.command(ctx, contracts.SubjectRunStart, cmd.RunID, cmd, &reply); err != nil {
		var late *unansweredError
		if errors.As(err, &late) {
			return g.settleStart(ctx, a, req, cmd.RunID, cmd.NotAfter)
		}
		return api.StartRunResponse{}, false, err
	}
	if reply.Error != nil {
		return api.StartRunResponse{}, false, relay(reply.Error)
	}
	g.log.Info("run started", "run", cmd.RunID, "actor", a.ID, "mode", reply.Mode, "workflow", reply.WorkflowType)
	resp := api.StartRunResponse{RunID: reply.RunID, Mode: reply.Mode, WorkflowType: reply.WorkflowType}
	if resp.RunID == "" {
		resp.RunID = cmd.RunID
	}
	return resp, reply.Resumed, nil
}

// startSettle is how long past a start's NotAfter the gateway waits before
// it reads whether the run exists: time for a header append that began just
// before NotAfter to land, and for the clocks of the gateway and the
// orchestrator to differ by up to a second.
const startSettle = 2 * time.Second

// settleStart answers a start the orchestrator did not answer in time. The
// orchestrator writes no run-started header after notAfter, so once that
// has passed (and startSettle with it) the ledger says for certain whether
// the run was created: 202 with the run when it was, 503 "not created" when
// it was not. A ledger that cannot be read then leaves it open, and the
// answer is 202 with the id: GET on the run's Location says which.
func (g *Gateway) settleStart(ctx context.Context, a contracts.Actor, req api.StartRunRequest, runID string, notAfter time.Time) (api.StartRunResponse, bool, error) {
	g.log.Warn("orchestrator did not answer a start; settling it from the ledger", "run", runID)
	t := time.NewTimer(time.Until(notAfter.Add(startSettle)))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return api.StartRunResponse{}, false, ctx.Err()
	case <-t.C:
	}
	rec, err := g.ownedRun(ctx, a, runID)
	switch {
	case err == nil:
		return api.StartRunResponse{RunID: runID, Mode: rec.Mode, WorkflowType: rec.WorkflowType}, false, nil
	case isRunNotFound(err):
		return api.StartRunResponse{}, false, unavailable(
			fmt.Sprintf("run %s was not created: the orchestrator did not answer within %s, and it creates no run after that", runID, runCommandTimeout),
			"start the run again (with an Idempotency-Key, the same key is safe to resend)")
	}
	g.log.Warn("a start that got no answer cannot be settled: the ledger cannot be read", "run", runID)
	return api.StartRunResponse{RunID: runID, Mode: req.Mode, WorkflowType: req.WorkflowType}, false, nil
}

// unansweredError is a run command that was sent and got no answer in time:
// it may or may not have been carried out.
type unansweredError struct{ err error }

func (e *unansweredError) Error() string { return e.err.Error() }
func (e *unansweredError) Unwrap() error { return e.err }

// normalize applies the defaults of a start request and refuses what cannot
// start: policy.CheckStart, the rule the orchestrator applies too.
func normalize(req *api.StartRunRequest) error {
	cmd := contracts.StartRun{Mode: req.Mode, WorkflowType: req.WorkflowType, Objective: req.Objective,
		PreviousRunID: req.PreviousRunID, AutoExecute: req.AutoExecute}
	if p := policy.CheckStart(&cmd); p != nil {
		return badRequest(p.Code, p.Message, p.Fix)
	}
	req.Mode, req.WorkflowType = cmd.Mode, cmd.WorkflowType
	return nil
}

// checkConnection refuses a connection id no executor has published, and
// one its executor cannot open now: a run started there could read nothing.
func (g *Gateway) checkConnection(ctx context.Context, id string) error {
	d, err := g.descriptor(ctx, id)
	if err != nil {
		return err
	}
	if d.Status == contracts.ConnectionUnavailable {
		return fail(http.StatusServiceUnavailable, contracts.RefuseConnectionUnavailable,
			fmt.Sprintf("connection %q is unavailable: %s", id, d.Reason),
			"check that the database is up and reachable; start the run once GET "+api.PathConnections+" shows it available")
	}
	return nil
}

// cancel asks the orchestrator to stop a run the caller owns.
func (g *Gateway) cancel(ctx context.Context, a contracts.Actor, runID string) (contracts.RunStatus, error) {
	rec, err := g.ownedRun(ctx, a, runID)
	if err != nil {
		return "", err
	}
	if rec.Status.Terminal() {
		return "", fail(http.StatusConflict, contracts.CodeRunFinished,
			fmt.Sprintf("run %s already finished (%s)", runID, rec.Status), "nothing to stop")
	}
	var reply contracts.CancelRunReply
	if err := g.command(ctx, contracts.SubjectRunCancel, runID, contracts.CancelRun{RunID: runID, Actor: a}, &reply); err != nil {
		return "", err
	}
	if reply.Error != nil {
		return "", relay(reply.Error)
	}
	return reply.Status, nil
}

// command sends one run command to the orchestrator and decodes its reply.
func (g *Gateway) command(ctx context.Context, subject, runID string, cmd, reply any) error {
	err := natsx.Request(ctx, g.nc, subject, cmd, reply, natsx.WithTimeout(runCommandTimeout))
	switch {
	case errors.Is(err, natsx.ErrNotDelivered):
		return unavailable("no orchestrator is running", "start one (sonde serve, or --services orchestrator)")
	case errors.Is(err, natsx.ErrUnanswered) && errors.Is(err, context.DeadlineExceeded):
		g.log.Warn("orchestrator did not answer", "subject", subject, "run", runID)
		return &unansweredError{unavailable(fmt.Sprintf("the orchestrator did not answer within %s; run %s may or may not have received the request", runCommandTimeout, runID),
			"GET "+api.RunPath(runID)+" shows whether it did")}
	case errors.Is(err, natsx.ErrUnanswered):
		g.log.Warn("run command failed", "subject", subject, "run", runID, "err", err)
		return unavailable("the orchestrator cannot be reached", "retry shortly; check NATS")
	case err != nil:
		return fmt.Errorf("gateway: %s reply: %w", subject, err)
	}
	return nil
}

// ownedRun folds a run's ledger and answers run_not_found unless the caller
// is the actor its header records: a foreign run is indistinguishable from a
// missing one.
func (g *Gateway) ownedRun(ctx context.Context, a contracts.Actor, runID string) (contracts.Record, error) {
	if !contracts.ValidRunID(runID) {
		return contracts.Record{}, runNotFound(runID)
	}
	l, err := g.openLedger(ctx)
	if err != nil {
		g.log.Warn("ledger unavailable", "err", err)
		return contracts.Record{}, unavailable("the run ledger cannot be reached", "retry shortly; check NATS")
	}
	entries, err := l.Read(ctx, runID)
	if errors.Is(err, ledger.ErrNotFound) {
		return contracts.Record{}, runNotFound(runID)
	}
	if err != nil {
		g.log.Warn("ledger read failed", "run", runID, "err", err)
		return contracts.Record{}, unavailable("the run ledger cannot be read", "retry shortly; check NATS")
	}
	rec := ledger.Fold(runID, entries)
	if rec.Actor.ID == "" || rec.Actor.ID != a.ID {
		return contracts.Record{}, runNotFound(runID)
	}
	return rec, nil
}

// newRunID is "r" and a lowercase ULID: unique, time-ordered and a valid
// subject token.
func newRunID() string { return "r" + strings.ToLower(ulid.Make().String()) }
