// Package modelturn is Sonde's model-turn service: the one place that holds a
// model provider's key. Each request is one model call, streamed; its text
// deltas are published on contracts.ModelDeltaSubject(runID) as they arrive
// and the reply carries the text, tool calls, finish reason and usage, or a
// failure classified by type. Replicas serve contracts.SubjectModelTurn and
// contracts.SubjectModelProbe in the contracts.QueueModelTurn queue group.
package modelturn

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/demoscript"
	"github.com/sondehq/sonde/pkg/inflight"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/pkg/policy"
	"github.com/sondehq/sonde/services/modelturn/internal/anthropicmsg"
	"github.com/sondehq/sonde/services/modelturn/internal/failure"
	"github.com/sondehq/sonde/services/modelturn/internal/geminichat"
	"github.com/sondehq/sonde/services/modelturn/internal/ollamachat"
	"github.com/sondehq/sonde/services/modelturn/internal/openaichat"
)

// MaxTurnTimeout is the ceiling on one model call, whatever
// AGENT_MODEL_TURN_TIMEOUT_MS says: just under half the smallest workflow
// deadline, because a run has to be able to take two turns to finish.
var MaxTurnTimeout = maxTurnTimeout()

func maxTurnTimeout() time.Duration {
	smallest := int64(0)
	for _, w := range contracts.WorkflowTypes {
		if b, ok := policy.Budget(w); ok && (smallest == 0 || b.DeadlineMs < smallest) {
			smallest = b.DeadlineMs
		}
	}
	return time.Duration(smallest/2)*time.Millisecond - time.Second
}

// DemoModel is the model name demo replies carry.
const DemoModel = demoscript.Model

// maxConcurrentTurns bounds the model calls one replica makes at a time; a
// request beyond it waits in the subscription.
const maxConcurrentTurns = 64

// demoChunkDelay paces the demo's streamed chunks so a console shows the
// text arrive as a real model's would.
const demoChunkDelay = 15 * time.Millisecond

const unconfiguredMessage = "no model is configured: set LLM_PROVIDER (openai, anthropic, gemini, ollama, or demo for the recorded demonstration), " +
	"LLM_MODEL and LLM_API_KEY (and LLM_API_URL for a server of your own)"

// adapter makes one model call to one vendor. Every provider has one, in
// internal/<vendor>; each classifies its failures as *failure.Error.
type adapter interface {
	Turn(ctx context.Context, req contracts.ModelTurnRequest, onDelta func(text string)) (contracts.ModelTurnReply, error)
}

// Service is the model-turn service. Use New, then Start to serve over NATS,
// or call Turn in-process.
type Service struct {
	provider string
	model    string
	apiURL   string
	demo     bool
	client   adapter // nil when no model is configured
	timeout  time.Duration
	tuning   contracts.ModelTuning
	retry    retryPolicy
	log      *slog.Logger
	replay   *modeltest.Server // the demo's replay server
	probes   probeCache
	onDelta  func(string) // tests: receives deltas in place of NATS
	beat     time.Duration
	drain    time.Duration

	mu      sync.Mutex
	nc      *nats.Conn
	svc     micro.Service
	ctx     context.Context
	cancel  context.CancelFunc
	sem     chan struct{}
	stopped bool
	once    sync.Once
	// inflight counts the turns and probes being served, so Stop can drain.
	inflight inflight.Counter
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
	s := &Service{provider: cfg.Provider, apiURL: cfg.APIURL, log: log.With("service", "modelturn"),
		sem: make(chan struct{}, maxConcurrentTurns), timeout: cfg.turnTimeout(), retry: defaultRetry,
		beat: cfg.HeartbeatInterval, drain: cfg.DrainTimeout, nc: cfg.NATS}
	if s.beat <= 0 {
		s.beat = DefaultHeartbeatInterval
	}
	if s.drain <= 0 {
		s.drain = DefaultDrainTimeout
	}
	for _, w := range cfg.Warnings {
		s.log.Warn(w)
	}
	var err error
	switch cfg.Provider {
	case ProviderNone:
		s.log.Warn("no model is configured; every turn will fail until LLM_PROVIDER is set")
	case ProviderDemo:
		err = s.startDemo()
	case ProviderOpenAI, ProviderAnthropic, ProviderGemini, ProviderOllama:
		s.model = cfg.Model
		s.tuning = resolveTuning(cfg.TuningPath, cfg.Model)
		numCtx := completeSettings(cfg, &s.tuning, s.log)
		s.client, err = newAdapter(cfg, s.tuning.Settings.Temperature, numCtx, s.log)
	default:
		return nil, fmt.Errorf("modelturn: unknown LLM_PROVIDER %q (want openai, anthropic, gemini, ollama or demo)", cfg.Provider)
	}
	if err != nil {
		return nil, err
	}
	if cfg.Provider != ProviderDemo && cfg.Provider != ProviderNone {
		s.logTuning()
	}
	return s, nil
}

// newAdapter builds the adapter of cfg's provider, sampling at temperature
// (nil: the vendor's own); numCtx is the context size asked of an Ollama
// model.
func newAdapter(cfg Config, temperature *float64, numCtx int, log *slog.Logger) (adapter, error) {
	if cfg.Model == "" {
		return nil, fmt.Errorf("modelturn: LLM_MODEL is required for the %s provider", cfg.Provider)
	}
	keyless := cfg.Provider == ProviderOllama || cfg.APIURL != ""
	if cfg.APIKey == "" && !keyless {
		return nil, fmt.Errorf("modelturn: LLM_API_KEY is required for the %s provider's public API (set LLM_API_URL for a server that needs none)", cfg.Provider)
	}
	var (
		a   adapter
		err error
	)
	switch cfg.Provider {
	case ProviderOpenAI:
		a, err = openaichat.New(openaichat.Config{Model: cfg.Model, APIKey: cfg.APIKey, BaseURL: cfg.APIURL, Temperature: temperature, Logger: log})
	case ProviderAnthropic:
		a, err = anthropicmsg.New(anthropicmsg.Config{Model: cfg.Model, APIKey: cfg.APIKey, BaseURL: cfg.APIURL, Logger: log})
	case ProviderGemini:
		a, err = geminichat.New(geminichat.Config{Model: cfg.Model, APIKey: cfg.APIKey, BaseURL: cfg.APIURL, Temperature: temperature, Logger: log})
	case ProviderOllama:
		a, err = ollamachat.New(ollamachat.Config{Model: cfg.Model, APIKey: cfg.APIKey, BaseURL: cfg.APIURL, NumCtx: numCtx, Temperature: temperature, Logger: log})
	}
	if err != nil {
		return nil, fmt.Errorf("modelturn: %w", err)
	}
	return a, nil
}

// startDemo starts the in-process replay server and points the openai
// adapter at it.
func (s *Service) startDemo() error {
	replay, err := modeltest.NewOpenAI(demoScript{demoscript.New()},
		modeltest.WithoutRecording(), modeltest.WithChunkDelay(demoChunkDelay), modeltest.WithLogger(s.log))
	if err != nil {
		return fmt.Errorf("modelturn: demo: %w", err)
	}
	s.tuning = resolveTuning("", DemoModel)
	completeSettings(Config{Provider: ProviderOpenAI}, &s.tuning, s.log)
	c, err := openaichat.New(openaichat.Config{Model: DemoModel, APIKey: "sonde-demo", BaseURL: replay.URL(),
		Temperature: s.tuning.Settings.Temperature, Logger: s.log})
	if err != nil {
		_ = replay.Close()
		return fmt.Errorf("modelturn: demo: %w", err)
	}
	s.model, s.demo, s.client, s.replay = DemoModel, true, c, replay
	s.log.Info("demo provider: runs are driven by a recorded investigation, not a model", "model", DemoModel)
	return nil
}

// logTuning says what became of the operator's tuning document.
func (s *Service) logTuning() {
	t := s.tuning
	switch t.State {
	case contracts.TuningApplied:
		s.log.Info("model tuning applied", "path", t.Path, "digest", t.Digest, "settingsSource", t.SettingsSource)
	case contracts.TuningIgnored:
		s.log.Warn("model tuning ignored; the shipped settings stand", "path", t.Path, "reason", t.Reason)
	}
}

// Configured reports the provider and model the service calls, whether they
// are the demo replay, and whether any model is configured at all.
func (s *Service) Configured() (provider, model string, demo bool, ok bool) {
	return s.provider, s.model, s.demo, s.client != nil
}

// Turn makes one model call, bounded by the smaller of req.TimeoutMs and
// the configured turn timeout (AGENT_MODEL_TURN_TIMEOUT_MS). A retryable
// failure is tried again under the service's retry policy (see retry.go)
// while the bound allows. Text deltas are published on the run's delta
// subject once the service is started. A failure is carried in the reply,
// never returned.
func (s *Service) Turn(ctx context.Context, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
	reply := contracts.ModelTurnReply{Provider: s.provider, Model: s.model, Demo: s.demo}
	if s.client == nil {
		reply.Failure = &contracts.ModelFailure{Reason: contracts.ReasonModelUnavailable, Message: unconfiguredMessage}
		return reply
	}
	timeout := s.timeout
	if req.TimeoutMs > 0 {
		timeout = min(timeout, time.Duration(req.TimeoutMs)*time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	out, attempts, err := s.retry.do(ctx, func(ctx context.Context, onDelta func(string)) (contracts.ModelTurnReply, error) {
		return s.client.Turn(ctx, req, onDelta)
	}, s.deltas(req))
	if err != nil {
		f := failure.As(err)
		reply.Failure = f.Model()
		s.log.Warn("model turn failed", "runId", req.RunID, "turn", req.Turn, "provider", s.provider, "model", s.model,
			"reason", f.Reason, "retryable", f.Retryable, "attempts", attempts, "ms", time.Since(start).Milliseconds())
		return reply
	}
	out.Provider, out.Model, out.Demo = reply.Provider, reply.Model, reply.Demo
	s.log.Info("model turn", "runId", req.RunID, "turn", req.Turn, "provider", s.provider, "model", s.model,
		"finishReason", out.FinishReason, "toolCalls", len(out.ToolCalls), "attempts", attempts,
		"inputTokens", out.Usage.InputTokens, "outputTokens", out.Usage.OutputTokens, "cachedTokens", out.Usage.CachedTokens,
		"ms", time.Since(start).Milliseconds())
	return out
}
