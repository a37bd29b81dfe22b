package modelturn

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// The providers New accepts.
const (
	// ProviderNone leaves the service unconfigured: it starts, and every
	// turn answers a model-unavailable failure saying how to configure one.
	ProviderNone = ""
	// ProviderOpenAI is the OpenAI chat-completions API or a server
	// compatible with it (LLM_API_URL).
	ProviderOpenAI = "openai"
	// ProviderAnthropic is the Anthropic Messages API.
	ProviderAnthropic = "anthropic"
	// ProviderGemini is the Gemini API.
	ProviderGemini = "gemini"
	// ProviderOllama is Ollama's native chat API.
	ProviderOllama = "ollama"
	// ProviderDemo replays a recorded investigation of the demo shop
	// database; replies are marked Demo.
	ProviderDemo = "demo"
)

// DefaultTurnTimeout bounds one model call when AGENT_MODEL_TURN_TIMEOUT_MS
// is unset.
const DefaultTurnTimeout = 90 * time.Second

// DefaultHeartbeatInterval paces a turn's heartbeats: well inside the
// orchestrator's default 20 s bound on a silent turn.
const DefaultHeartbeatInterval = 5 * time.Second

// DefaultDrainTimeout is how long a stopping service finishes its turns in
// flight: inside the 30 s a container runtime usually waits after SIGTERM.
const DefaultDrainTimeout = 25 * time.Second

// Config selects and configures the model provider.
type Config struct {
	// Provider is one of the Provider constants.
	Provider string
	// Model names the model (required for every provider but demo).
	Model string
	// APIKey authenticates with the provider. It is the only credential ever
	// sent: the SDKs' own environment variables are never read.
	APIKey string
	// APIURL is the provider's API root in the form its SDK takes:
	// "http://host:port/v1" for OpenAI-compatible servers, "http://host:port"
	// for Anthropic, Gemini and Ollama; empty means the provider's own.
	APIURL string
	// TurnTimeout bounds one model call; zero means DefaultTurnTimeout. It is
	// capped at MaxTurnTimeout.
	TurnTimeout time.Duration
	// TuningPath is the operator's model-tuning document
	// (AGENT_MODEL_TUNING_PATH); empty means none.
	TuningPath string
	// ContextTokens is the configured model's context window in tokens
	// (AGENT_MODEL_CONTEXT_TOKENS); zero leaves it to the tuning documents
	// (and, for Ollama, to num_ctx). For Ollama it is also the num_ctx asked
	// for.
	ContextTokens int
	// HeartbeatInterval is how often a turn in flight publishes a heartbeat
	// on its run's delta subject, so the orchestrator can tell a slow model
	// from a lost turn; zero means DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
	// DrainTimeout is how long Stop lets the turns in flight finish before it
	// cancels them; zero means DefaultDrainTimeout.
	DrainTimeout time.Duration
	// Warnings are configuration values ConfigFromEnv ignored; New logs them.
	Warnings []string
	// Logger receives the service's log, vendor error text included; nil
	// means slog.Default().
	Logger *slog.Logger
	// NATS is the connection Start serves on; New does not need it (Turn
	// runs in-process without NATS).
	NATS *nats.Conn
}

// ConfigFromEnv reads LLM_PROVIDER, LLM_MODEL, LLM_API_KEY, LLM_API_URL,
// AGENT_MODEL_TURN_TIMEOUT_MS, AGENT_MODEL_TUNING_PATH and
// AGENT_MODEL_CONTEXT_TOKENS, and nothing else: OPENAI_API_KEY,
// ANTHROPIC_API_KEY, GEMINI_API_KEY, GOOGLE_* and the like are ignored. A
// turn timeout that is not a positive whole number of milliseconds, or a
// context window that is not a whole number of tokens from 2048 to 2097152,
// is ignored (the default stands) and noted in Warnings.
func ConfigFromEnv() Config {
	cfg := Config{
		Provider:   strings.ToLower(strings.TrimSpace(os.Getenv("LLM_PROVIDER"))),
		Model:      strings.TrimSpace(os.Getenv("LLM_MODEL")),
		APIKey:     strings.TrimSpace(os.Getenv("LLM_API_KEY")),
		APIURL:     strings.TrimSpace(os.Getenv("LLM_API_URL")),
		TuningPath: strings.TrimSpace(os.Getenv("AGENT_MODEL_TUNING_PATH")),
	}
	if raw := strings.TrimSpace(os.Getenv("AGENT_MODEL_TURN_TIMEOUT_MS")); raw != "" {
		ms, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || ms <= 0 {
			cfg.Warnings = append(cfg.Warnings, fmt.Sprintf(
				"AGENT_MODEL_TURN_TIMEOUT_MS=%q is not a positive whole number of milliseconds; ignored, the default %d stands",
				raw, DefaultTurnTimeout.Milliseconds()))
		} else {
			cfg.TurnTimeout = time.Duration(min(ms, MaxTurnTimeout.Milliseconds())) * time.Millisecond
			if ms > MaxTurnTimeout.Milliseconds() {
				cfg.Warnings = append(cfg.Warnings, fmt.Sprintf(
					"AGENT_MODEL_TURN_TIMEOUT_MS=%d is above the ceiling of %d (just under half the smallest workflow deadline); capped",
					ms, MaxTurnTimeout.Milliseconds()))
			}
		}
	}
	if raw := strings.TrimSpace(os.Getenv("AGENT_MODEL_CONTEXT_TOKENS")); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < minContextTokens || n > maxContextTokens {
			cfg.Warnings = append(cfg.Warnings, fmt.Sprintf(
				"AGENT_MODEL_CONTEXT_TOKENS=%q is not a whole number of tokens from %d to %d; ignored, the model's known window stands",
				raw, minContextTokens, maxContextTokens))
		} else {
			cfg.ContextTokens = n
		}
	}
	return cfg
}

// turnTimeout is the configured bound on one call.
func (c Config) turnTimeout() time.Duration {
	switch {
	case c.TurnTimeout <= 0:
		return DefaultTurnTimeout
	case c.TurnTimeout > MaxTurnTimeout:
		return MaxTurnTimeout
	}
	return c.TurnTimeout
}
