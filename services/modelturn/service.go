// Package modelturn is Sonde's model-turn service: the one place that holds a
// model provider's key. Each request is one model call, streamed; its text
// deltas are published on contracts.ModelDeltaSubject(runID) as they arrive
// and the reply carries the text, tool calls, finish reason and usage, or a
// failure classified by type. Replicas serve contracts.SubjectModelTurn and
// contracts.SubjectModelProbe in the contracts.QueueModelTurn queue group.
package modelturn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/demoscript"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/services/modelturn/internal/failure"
	"github.com/sondehq/sonde/services/modelturn/internal/openaichat"
)

// MaxTurnTimeout is the service's ceiling on one model call; a request's
// TimeoutMs can only shorten it.
const MaxTurnTimeout = 90 * time.Second

// DemoModel is the model name demo replies carry.
const DemoModel = demoscript.Model

// maxConcurrentTurns bounds the model calls one replica makes at a time; a
// request beyond it waits in the subscription.
const maxConcurrentTurns = 64

// demoChunkDelay paces the demo's streamed chunks so a console shows the
// text arriving as a real model's would.
const demoChunkDelay = 15 * time.Millisecond

const unconfiguredMessage = "no model is configured: set LLM_PROVIDER (openai, or demo for the recorded demonstration), " +
	"LLM_MODEL and LLM_API_KEY (and LLM_API_URL for a compatible server)"

// turner makes one model call.
type turner interface {
	Turn(ctx context.Context, req contracts.ModelTurnRequest, onDelta func(text string)) (contracts.ModelTurnReply, error)
}

// Service is the model-turn service. Use New, then Start to serve over NATS,
// or call Turn in-process.
type Service struct {
	provider string
	model    string
	demo     bool
	client   turner // nil when no model is configured
	log      *slog.Logger
	replay   *modeltest.OpenAIServer // the demo's replay server

	mu      sync.Mutex
	nc      *nats.Conn
	svc     micro.Service
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	sem     chan struct{}
	stopped bool
	once    sync.Once
}

// New validates cfg and builds the service. An empty Provider yields a
// service that starts and answers every turn with a model-unavailable
// failure; "demo" starts the in-process replay server (released by Stop); an
// unknown provider is an error.
func New(cfg Config) (*Service, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Service{provider: cfg.Provider, log: log.With("service", "modelturn"), sem: make(chan struct{}, maxConcurrentTurns)}
	switch cfg.Provider {
	case ProviderNone:
		s.log.Warn("no model is configured; every turn will fail until LLM_PROVIDER is set")
		return s, nil
	case ProviderOpenAI:
		if cfg.Model == "" {
			return nil, errors.New("modelturn: LLM_MODEL is required for the openai provider")
		}
		if cfg.APIKey == "" && cfg.APIURL == "" {
			return nil, errors.New("modelturn: LLM_API_KEY is required for the OpenAI API (set LLM_API_URL for a compatible server that needs none)")
		}
		c, err := openaichat.New(openaichat.Config{Model: cfg.Model, APIKey: cfg.APIKey, BaseURL: cfg.APIURL, Logger: s.log})
		if err != nil {
			return nil, fmt.Errorf("modelturn: %w", err)
		}
		s.model, s.client = cfg.Model, c
	case ProviderDemo:
		replay, err := modeltest.NewOpenAI(demoscript.New(),
			modeltest.WithoutRecording(), modeltest.WithChunkDelay(demoChunkDelay), modeltest.WithLogger(s.log))
		if err != nil {
			return nil, fmt.Errorf("modelturn: demo: %w", err)
		}
		c, err := openaichat.New(openaichat.Config{Model: DemoModel, APIKey: "sonde-demo", BaseURL: replay.URL(), Logger: s.log})
		if err != nil {
			_ = replay.Close()
			return nil, fmt.Errorf("modelturn: demo: %w", err)
		}
		s.model, s.demo, s.client, s.replay = DemoModel, true, c, replay
		s.log.Info("demo provider: runs are driven by a recorded investigation, not a model", "model", DemoModel)
	default:
		return nil, fmt.Errorf("modelturn: unknown LLM_PROVIDER %q (want openai or demo)", cfg.Provider)
	}
	return s, nil
}

// Configured reports the provider and model the service calls, whether they
// are the demo replay, and whether any model is configured at all.
func (s *Service) Configured() (provider, model string, demo bool, ok bool) {
	return s.provider, s.model, s.demo, s.client != nil
}

// Turn makes one model call, bounded by the smaller of req.TimeoutMs and
// MaxTurnTimeout. Text deltas are published on the run's delta subject once
// the service is started. A failure is carried in the reply, never returned.
func (s *Service) Turn(ctx context.Context, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
	reply := contracts.ModelTurnReply{Provider: s.provider, Model: s.model, Demo: s.demo}
	if s.client == nil {
		reply.Failure = &contracts.ModelFailure{Reason: contracts.ReasonModelUnavailable, Message: unconfiguredMessage}
		return reply
	}
	timeout := MaxTurnTimeout
	if req.TimeoutMs > 0 {
		timeout = min(timeout, time.Duration(req.TimeoutMs)*time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	out, err := s.client.Turn(ctx, req, s.deltas(req))
	if err != nil {
		f := failure.As(err)
		reply.Failure = f.Model()
		s.log.Warn("model turn failed", "runId", req.RunID, "turn", req.Turn, "provider", s.provider, "model", s.model,
			"reason", f.Reason, "retryable", f.Retryable, "ms", time.Since(start).Milliseconds())
		return reply
	}
	out.Provider, out.Model, out.Demo = reply.Provider, reply.Model, reply.Demo
	s.log.Info("model turn", "runId", req.RunID, "turn", req.Turn, "provider", s.provider, "model", s.model,
		"finishReason", out.FinishReason, "toolCalls", len(out.ToolCalls),
		"inputTokens", out.Usage.InputTokens, "outputTokens", out.Usage.OutputTokens, "cachedTokens", out.Usage.CachedTokens,
		"ms", time.Since(start).Milliseconds())
	return out
}

// Probe answers what the configured model is, or the failure when there is
// none. It does not yet call the model.
func (s *Service) Probe(ctx context.Context) contracts.ModelProbeReply {
	reply := contracts.ModelProbeReply{Provider: s.provider, Model: s.model, Demo: s.demo}
	if s.client == nil {
		reply.Failure = &contracts.ModelFailure{Reason: contracts.ReasonModelUnavailable, Message: unconfiguredMessage}
	}
	return reply
}
