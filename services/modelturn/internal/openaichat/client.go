// Package openaichat drives one model turn over the OpenAI chat-completions
// API (and the servers compatible with it: vLLM, llama.cpp, LM Studio,
// Ollama's /v1) with the openai-go SDK: a streamed call with usage, tools
// declared from their JSON Schemas, text deltas handed on as they arrive, and
// every way the call can fail classified into a Sonde failure reason.
package openaichat

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/modelturn/internal/failure"
	"github.com/sondehq/sonde/services/modelturn/internal/wire"
)

// DefaultBaseURL is OpenAI's own API.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config is what a Client needs; nothing is read from the environment.
type Config struct {
	// Model is sent as the request's model.
	Model string
	// APIKey is sent as a bearer token; empty sends no Authorization header
	// (local compatible servers need none).
	APIKey string
	// BaseURL is the API root, e.g. "http://localhost:11434/v1"; empty means
	// DefaultBaseURL.
	BaseURL string
	// Temperature is the sampling temperature sent with every call; nil
	// sends none (the server's default).
	Temperature *float64
	// HTTPClient carries the calls; nil uses a client of its own.
	HTTPClient *http.Client
	// Logger receives the vendor's error text, which never reaches a reply.
	Logger *slog.Logger
}

// Client makes model turns against one model.
type Client struct {
	completions openai.ChatCompletionService
	model       string
	temperature *float64
	log         *slog.Logger
}

// New validates cfg and returns a Client.
//
// The SDK's openai.NewClient starts from DefaultClientOptions, which read
// OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_ORG_ID, OPENAI_PROJECT_ID and
// OPENAI_CUSTOM_HEADERS from the environment. Sonde's credentials come from
// its own configuration only, so the chat-completions service is built
// directly from explicit options and no environment default can reach it.
func New(cfg Config) (*Client, error) {
	// The key travels by the SDK's own option, so a caller's HTTPClient
	// carries it too.
	a, err := wire.NewAdapter("openaichat", cfg.Model, cfg.BaseURL, DefaultBaseURL, wire.Credential{}, cfg.HTTPClient, cfg.Logger)
	if err != nil {
		return nil, err
	}
	opts := []option.RequestOption{
		option.WithHTTPClient(a.HTTP),
		option.WithBaseURL(strings.TrimSuffix(a.BaseURL.String(), "/") + "/"),
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return &Client{
		completions: openai.NewChatCompletionService(opts...),
		model:       cfg.Model,
		temperature: cfg.Temperature,
		log:         a.Log,
	}, nil
}

// Model returns the model the client calls.
func (c *Client) Model() string { return c.model }

// Turn makes one streamed chat-completions call for req, bounded by ctx.
// onDelta (may be nil) receives each fragment of text as it arrives. The reply
// carries text, tool calls, finish reason and usage; provider and model are
// the caller's to fill in. A failed call returns a *failure.Error.
func (c *Client) Turn(ctx context.Context, req contracts.ModelTurnRequest, onDelta func(text string)) (contracts.ModelTurnReply, error) {
	params, err := c.params(req)
	if err != nil {
		return contracts.ModelTurnReply{}, failure.New(contracts.ReasonInternal, false,
			"the turn request could not be put to the model", err)
	}
	ctx, _ = wire.Ensure(ctx)
	w := &wireWatch{}
	stream := c.completions.NewStreaming(ctx, params, option.WithMiddleware(w.middleware))
	defer stream.Close()

	var acc accumulator
	for stream.Next() {
		if text := acc.add(stream.Current()); text != "" && onDelta != nil {
			onDelta(text)
		}
	}
	if err := stream.Err(); err != nil {
		return contracts.ModelTurnReply{}, c.classify(ctx, req, err)
	}
	if body := w.jsonBody(); body != nil {
		// The server ignored "stream": true and sent one chat.completion body.
		reply, err := fromCompletion(body)
		if err != nil {
			return contracts.ModelTurnReply{}, c.fail(req, err, failure.New(contracts.ReasonModelUnavailable, true,
				"the model server answered with a body Sonde could not read", err))
		}
		if reply.Text != "" && onDelta != nil {
			onDelta(reply.Text)
		}
		return reply, nil
	}
	if err := ctx.Err(); err != nil {
		// A cancelled read can end the stream without an error of its own.
		return contracts.ModelTurnReply{}, c.classify(ctx, req, err)
	}
	if !w.sawDone() || acc.finishReason == "" {
		err := fmt.Errorf("stream ended without a finish reason (%t) or the [DONE] marker (%t)", acc.finishReason != "", w.sawDone())
		return contracts.ModelTurnReply{}, c.fail(req, err, failure.New(contracts.ReasonModelUnavailable, true,
			"the model's stream was cut short before it finished", err))
	}
	return acc.reply(), nil
}

// fail logs a classified failure with the underlying error and returns it.
func (c *Client) fail(req contracts.ModelTurnRequest, err error, f *failure.Error) *failure.Error {
	c.log.Warn("model call failed",
		"runId", req.RunID, "turn", req.Turn, "model", c.model,
		"reason", f.Reason, "retryable", f.Retryable, "err", err)
	return f
}
