package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/natsx"
	"github.com/sondehq/sonde/pkg/policy"
	"github.com/sondehq/sonde/services/gateway/api"
)

// agentMemoTTL is how long one availability answer is reused. The config
// probe answers every page load and the model probe is a request to
// modelturn, so a burst of callers shares one probe (in-flight included).
const agentMemoTTL = 5 * time.Second

// agentMemoNegativeTTL is how long a "not available" answer is reused: much
// shorter, so that starts work again as soon as NATS, JetStream or the model
// is back (and /readyz, which never reuses an answer, says ready).
const agentMemoNegativeTTL = 250 * time.Millisecond

// availability is the composed answer to "does this server run agents",
// before it is tailored to a caller.
type availability struct {
	enabled  bool
	provider string
	model    string
	demo     bool
	reason   contracts.Code
	detail   string
	tuning   *contracts.ModelTuning
}

// agentMemo holds the last availability answer.
type agentMemo struct {
	mu  sync.Mutex
	at  time.Time
	ok  bool
	val availability
}

// agentConfig answers GET /api/agent/config. It never fails: an unavailable
// agent is its answer, not an error. Detail goes to admin actors only.
func (g *Gateway) agentConfig(c echo.Context) error {
	a, err := actor(c)
	if err != nil {
		return err
	}
	av := g.agentAvailability(c.Request().Context())
	out := api.AgentConfig{Enabled: av.enabled, Provider: av.provider, Model: av.model, Demo: av.demo, Reason: av.reason}
	if !av.enabled && a.Role == contracts.RoleAdmin {
		out.Detail = av.detail
	}
	if a.Role == contracts.RoleAdmin {
		out.ModelTuning = av.tuning
	}
	out.Workflows = servedWorkflows()
	return c.JSON(http.StatusOK, out)
}

// servedWorkflows is the workflow table as GET /api/agent/config serves it.
func servedWorkflows() []api.Workflow {
	var out []api.Workflow
	for _, w := range policy.Describe() {
		out = append(out, api.Workflow{ID: w.Type, Label: w.Label, Goal: w.Goal, Agent: w.Agent, AutoExecute: w.AutoExecute})
	}
	return out
}

// agentAvailability composes the answer: the operator's switch, then whether the
// ledger stream can be reached, then whether a model answers the probe.
func (g *Gateway) agentAvailability(ctx context.Context) availability {
	if g.cfg.Disabled {
		return availability{reason: contracts.CodeOperatorDisabled,
			detail: "the operator switched agents off for this server"}
	}
	m := &g.agent
	m.mu.Lock()
	defer m.mu.Unlock()
	ttl := agentMemoTTL
	if !m.val.enabled {
		ttl = agentMemoNegativeTTL
	}
	if m.ok && time.Since(m.at) < ttl {
		return m.val
	}
	// The answer is shared: one caller going away must not spoil it for the rest.
	m.val, m.at, m.ok = g.probe(context.WithoutCancel(ctx)), time.Now(), true
	return m.val
}

func (g *Gateway) probe(ctx context.Context) availability {
	lctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if _, err := g.js.Stream(lctx, contracts.LedgerStream); err != nil {
		return availability{reason: contracts.CodeLedgerUnavailable,
			detail: fmt.Sprintf("the ledger stream %s cannot be reached: %v", contracts.LedgerStream, err)}
	}
	reply, err := g.probeModel(ctx, contracts.ModelProbeRequest{}, probeTimeout)
	if err != nil {
		return availability{reason: contracts.CodeNoModelConfigured, detail: err.Error(), tuning: reply.Tuning}
	}
	return availability{enabled: true, provider: reply.Provider, model: reply.Model, demo: reply.Demo, tuning: reply.Tuning}
}

// capabilityRefusal is an agent run refused because the probe established
// the model unable to do the job; it is answered 422 with the probe's words.
type capabilityRefusal struct{ body api.AgentModelRefusal }

func (e *capabilityRefusal) Error() string {
	return "model refused by the capability probe: " + e.body.Error.Message
}

// capabilityGate refuses an agent run on a model the capability probe
// established as unable to call tools, honour a schema or stream. Planning
// runs are toolless and never probed. Everything the probe merely failed on
// (no answer, a bad key, a quota, a 5xx) starts as before: the drive then
// records what happened.
func (g *Gateway) capabilityGate(ctx context.Context, mode contracts.Mode) error {
	if mode != contracts.ModeAgent {
		return nil
	}
	reply, err := g.probeModel(ctx, contracts.ModelProbeRequest{Capabilities: true}, capabilityProbeTimeout)
	// Only what the probe watched fail refuses; what it could not observe
	// (Missing, not Disproved) starts as before.
	if err != nil || len(reply.Disproved) == 0 {
		return nil
	}
	g.log.Warn("agent run refused by the capability probe", "provider", reply.Provider, "model", reply.Model,
		"missing", reply.Missing, "disproved", reply.Disproved)
	disproved := reply.Disproved
	if disproved == nil {
		disproved = []string{}
	}
	msg := reply.Message
	if msg == "" {
		msg = fmt.Sprintf("the %s model %q cannot do an agent run: it lacks %s", reply.Provider, reply.Model, strings.Join(reply.Missing, ", "))
	}
	return &capabilityRefusal{body: api.AgentModelRefusal{
		Error: contracts.Error{Code: api.CodeModelCapabilityMissing, Message: msg,
			Fix: `start the run in planning mode ("mode":"planning"), which needs no tools, or configure a model that can call tools (sonde probe says what a model can do)`},
		Missing: reply.Missing, Disproved: disproved, Mode: mode}}
}

// probeModel asks modelturn's capability probe. No responder, no answer in
// time, or an answer carrying a failure all mean no usable model.
func (g *Gateway) probeModel(ctx context.Context, req contracts.ModelProbeRequest, probeTimeout time.Duration) (contracts.ModelProbeReply, error) {
	var reply contracts.ModelProbeReply
	err := natsx.Request(ctx, g.nc, contracts.SubjectModelProbe, req, &reply, natsx.WithTimeout(probeTimeout))
	switch {
	case errors.Is(err, natsx.ErrNotDelivered):
		return reply, errors.New("no model service is running (nothing answers " + contracts.SubjectModelProbe + ")")
	case errors.Is(err, natsx.ErrUnanswered) && errors.Is(err, context.DeadlineExceeded):
		return reply, fmt.Errorf("the model service did not answer its probe within %s", probeTimeout)
	case err != nil:
		return reply, fmt.Errorf("model probe: %w", err)
	}
	if f := reply.Failure; f != nil {
		return reply, fmt.Errorf("the configured model is not usable (%s): %s", f.Reason, f.Message)
	}
	return reply, nil
}
