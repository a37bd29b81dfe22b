package modelturn

import (
	"log/slog"
	"os"
	"strings"
)

// The providers New accepts.
const (
	// ProviderNone leaves the service unconfigured: it starts, and every
	// turn answers a model-unavailable failure saying how to configure one.
	ProviderNone = ""
	// ProviderOpenAI is the OpenAI chat-completions API or a server
	// compatible with it (LLM_API_URL).
	ProviderOpenAI = "openai"
	// ProviderDemo replays a recorded investigation of the demo shop
	// database; replies are marked Demo.
	ProviderDemo = "demo"
)

// Config selects and configures the model provider.
type Config struct {
	// Provider is ProviderNone, ProviderOpenAI or ProviderDemo.
	Provider string
	// Model names the model (required for openai; ignored for demo).
	Model string
	// APIKey authenticates with the provider. It is the only credential ever
	// sent: the SDK's own environment variables are never read.
	APIKey string
	// APIURL is the provider's API root, e.g. "http://localhost:11434/v1";
	// empty means the provider's own.
	APIURL string
	// Logger receives the service's log, vendor error text included; nil
	// means slog.Default().
	Logger *slog.Logger
}

// ConfigFromEnv reads LLM_PROVIDER, LLM_MODEL, LLM_API_KEY and LLM_API_URL,
// and nothing else: OPENAI_API_KEY, OPENAI_BASE_URL and the like are ignored.
func ConfigFromEnv() Config {
	return Config{
		Provider: strings.ToLower(strings.TrimSpace(os.Getenv("LLM_PROVIDER"))),
		Model:    strings.TrimSpace(os.Getenv("LLM_MODEL")),
		APIKey:   strings.TrimSpace(os.Getenv("LLM_API_KEY")),
		APIURL:   strings.TrimSpace(os.Getenv("LLM_API_URL")),
	}
}
