package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/services/gateway/api"
)

// Limits on what a caller may send.
const (
	maxBodyBytes      = 1 << 20
	maxObjectiveBytes = 16 << 10
)

// startRun answers POST /api/agent/runs.
func (g *Gateway) startRun(c echo.Context) error {
	a, err := actor(c)
	if err != nil {
		return err
	}
	var req api.StartRunRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	resp, err := g.start(c.Request().Context(), a, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, resp)
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

// start validates a start request and sends it to the orchestrator.
func (g *Gateway) start(ctx context.Context, a contracts.Actor, req api.StartRunRequest) (api.StartRunResponse, error) {
	if err := normalize(&req); err != nil {
		return api.StartRunResponse{}, err
	}
	if av := g.agentAvailability(ctx); !av.enabled {
		return api.StartRunResponse{}, fail(http.StatusServiceUnavailable, av.reason,
			"agents are not available on this server", "GET "+api.PathConfig+" says which condition failed")
	}
	if err := g.checkConnection(ctx, req.ConnectionID); err != nil {
		return api.StartRunResponse{}, err
	}
	if err := g.capabilityGate(ctx, req.Mode); err != nil {
		return api.StartRunResponse{}, err
	}
	cmd := contracts.StartRun{
		RunID:         newRunID(),
		Mode:          req.Mode,
		WorkflowType:  req.WorkflowType,
		Objective:     req.Objective,
		ConnectionID:  req.ConnectionID,
		PreviousRunID: req.PreviousRunID,
		AutoExecute:   req.AutoExecute,
		Actor:         a,
	}
	var reply contracts.StartRunReply
	if err := g.command(ctx, contracts.SubjectRunStart, cmd.RunID, cmd, &reply); err != nil {
		return api.StartRunResponse{}, err
	}
	if reply.Error != nil {
		return api.StartRunResponse{}, relay(reply.Error)
	}
	g.log.Info("run started", "run", cmd.RunID, "actor", a.ID, "mode", reply.Mode, "workflow", reply.WorkflowType)
	resp := api.StartRunResponse{RunID: reply.RunID, Mode: reply.Mode, WorkflowType: reply.WorkflowType}
	if resp.RunID == "" {
		resp.RunID = cmd.RunID
	}
	return resp, nil
}

// normalize applies the defaults of a start request and refuses what cannot
// start, in the order a caller would fix it.
func normalize(req *api.StartRunRequest) error {
	if req.WorkflowType == "" {
		req.WorkflowType = contracts.WorkflowInvestigation
	}
	if !req.WorkflowType.Valid() {
		return badRequest(contracts.CodeUnknownWorkflow,
			fmt.Sprintf("unknown workflowType %q", req.WorkflowType),
			"use one of: "+joinWorkflows()+" (or omit it for investigation)")
	}
	if req.Mode == "" {
		req.Mode = contracts.ModeAgent
	}
	if !req.Mode.Valid() {
		return badRequest(contracts.CodeUnknownMode,
			fmt.Sprintf("unknown mode %q", req.Mode),
			`use "agent" or "planning" (or omit it for agent)`)
	}
	if strings.TrimSpace(req.Objective) == "" {
		return badRequest(contracts.CodeMissingObjective, "objective is missing or blank",
			"state what you want to know in objective")
	}
	if len(req.Objective) > maxObjectiveBytes {
		return badRequest(contracts.CodeBadRequest,
			fmt.Sprintf("objective is %d bytes, more than %d", len(req.Objective), maxObjectiveBytes),
			"shorten the objective")
	}
	if req.PreviousRunID != "" && !contracts.ValidRunID(req.PreviousRunID) {
		return badRequest(contracts.CodeBadRequest, "previousRunId is not a run id",
			"pass the runId of an earlier run of yours, or omit previousRunId")
	}
	if req.AutoExecute && (req.Mode != contracts.ModeAgent || req.WorkflowType != contracts.WorkflowDataAnalysis) {
		return badRequest(contracts.CodeBadRequest, "autoExecute applies to agent-mode data-analysis runs only",
			`omit autoExecute, or use mode "agent" with workflowType "data-analysis"`)
	}
	return nil
}

func joinWorkflows() string {
	s := make([]string, len(contracts.WorkflowTypes))
	for i, w := range contracts.WorkflowTypes {
		s[i] = string(w)
	}
	return strings.Join(s, ", ")
}

// checkConnection refuses a connection id no executor has published.
func (g *Gateway) checkConnection(ctx context.Context, id string) error {
	unknown := badRequest(contracts.CodeUnknownConnection,
		fmt.Sprintf("no connection %q is known to this server", id),
		"GET "+api.PathConnections+" lists the connection ids you can use")
	if strings.TrimSpace(id) == "" {
		return unknown
	}
	kv, err := g.connectionsKV(ctx)
	if err != nil {
		g.log.Warn("connections bucket unavailable", "err", err)
		return unavailable("the connection registry cannot be reached", "retry shortly; check NATS")
	}
	_, err = kv.Get(ctx, id)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrInvalidKey):
		return unknown
	case err != nil:
		g.log.Warn("connection lookup failed", "connection", id, "err", err)
		return unavailable("the connection registry cannot be reached", "retry shortly; check NATS")
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
	body, err := json.Marshal(cmd)
	if err != nil {
		return fmt.Errorf("gateway: encode %s: %w", subject, err)
	}
	ctx, cancel := context.WithTimeout(ctx, runCommandTimeout)
	defer cancel()
	msg, err := g.nc.RequestWithContext(ctx, subject, body)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return unavailable("no orchestrator is running", "start one (sonde serve, or --services orchestrator)")
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		g.log.Warn("orchestrator did not answer", "subject", subject, "run", runID)
		return unavailable(fmt.Sprintf("the orchestrator did not answer within %s; run %s may or may not have received the request", runCommandTimeout, runID),
			"GET "+api.RunPath(runID)+" shows whether it did")
	case err != nil:
		g.log.Warn("run command failed", "subject", subject, "run", runID, "err", err)
		return unavailable("the orchestrator cannot be reached", "retry shortly; check NATS")
	}
	if err := json.Unmarshal(msg.Data, reply); err != nil {
		return fmt.Errorf("gateway: decode %s reply: %w", subject, err)
	}
	return nil
}

// ownedRun folds a run's ledger and answers RUN_NOT_FOUND unless the caller
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

// decodeBody decodes a JSON body strictly: one object, no unknown fields.
func decodeBody(c echo.Context, v any) error {
	r := c.Request()
	body := http.MaxBytesReader(c.Response(), r.Body, maxBodyBytes)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			err = errors.New("unexpected data after the JSON object")
		}
	}
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &tooLarge):
		return fail(http.StatusRequestEntityTooLarge, contracts.CodeBadRequest,
			fmt.Sprintf("the request body is larger than %d bytes", maxBodyBytes), "send a smaller body")
	case errors.Is(err, io.EOF):
		return badRequest(contracts.CodeBadRequest, "the request body is empty", "send a JSON object")
	default:
		return badRequest(contracts.CodeBadRequest, "malformed request body: "+err.Error(),
			"send one JSON object with only the documented fields")
	}
}

// newRunID is "r" and a lowercase ULID: unique, time-ordered and a valid
// subject token.
func newRunID() string { return "r" + strings.ToLower(ulid.Make().String()) }
