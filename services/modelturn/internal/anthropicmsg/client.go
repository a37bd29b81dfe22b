// Package anthropicmsg drives one model turn over the Anthropic Messages API
// with anthropic-sdk-go: a streamed call, tools declared from their JSON
// Schemas, the stable prefix (tools and system prompt) marked for prompt
// caching, text deltas handed on as they arrive, and every way the call can
// fail classified into a Sonde failure reason by the error's type.
package anthropicmsg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/shared"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/modelturn/internal/failure"
	"github.com/sondehq/sonde/services/modelturn/internal/wire"
)

// DefaultBaseURL is Anthropic's own API.
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultMaxTokens bounds one reply when Config.MaxTokens is zero; the
// Messages API requires a bound.
const DefaultMaxTokens = 8192

// Config is what a Client needs; nothing is read from the environment.
type Config struct {
	Model string
	// APIKey is sent as x-api-key; empty sends none.
	APIKey string
	// BaseURL is the API root, e.g. "http://localhost:8080"; empty means
	// DefaultBaseURL.
	BaseURL   string
	MaxTokens int64
	Logger    *slog.Logger
}

// Client makes model turns against one model.
type Client struct {
	messages  anthropic.MessageService
	model     string
	maxTokens int64
	log       *slog.Logger
}

// New validates cfg and returns a Client.
//
// anthropic.NewClient starts from DefaultClientOptions, which read
// ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, ANTHROPIC_BASE_URL, profiles and
// federation settings from the environment. The message service is built
// directly from explicit options instead, and the transport strips any
// credential header but the configured one.
func New(cfg Config) (*Client, error) {
	a, err := wire.NewAdapter("anthropicmsg", cfg.Model, cfg.BaseURL, DefaultBaseURL,
		wire.Credential{Header: "X-Api-Key", Value: cfg.APIKey, Strip: []string{"X-Api-Key", "Authorization"}}, nil, cfg.Logger)
	if err != nil {
		return nil, err
	}
	maxTokens := cfg.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	return &Client{
		messages: anthropic.NewMessageService(
			option.WithHTTPClient(a.HTTP),
			option.WithBaseURL(strings.TrimSuffix(a.BaseURL.String(), "/")+"/"),
			option.WithMaxRetries(0),
		),
		model: cfg.Model, maxTokens: maxTokens, log: a.Log,
	}, nil
}

// Turn makes one streamed Messages call for req, bounded by ctx. onDelta (may
// be nil) receives each fragment of text as it arrives. A failed call
// returns a *failure.Error.
func (c *Client) Turn(ctx context.Context, req contracts.ModelTurnRequest, onDelta func(text string)) (contracts.ModelTurnReply, error) {
	params, err := c.params(req)
	if err != nil {
		return contracts.ModelTurnReply{}, failure.New(contracts.ReasonInternal, false, "the turn request could not be put to the model", err)
	}
	ctx, w := wire.Ensure(ctx)
	stream := c.messages.NewStreaming(ctx, params)
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
	if body := w.Buffered(); body != nil {
		var m anthropic.Message
		if err := json.Unmarshal(body, &m); err != nil || m.StopReason == "" {
			return contracts.ModelTurnReply{}, c.fail(req, fmt.Errorf("buffered body: %v", err), failure.New(contracts.ReasonModelUnavailable, true,
				"the model server answered with a body Sonde could not read", err))
		}
		c.log.Warn("model server answered a streaming request with one buffered body", "runId", req.RunID, "turn", req.Turn, "model", c.model)
		reply := fromMessage(m)
		if reply.Text != "" && onDelta != nil {
			onDelta(reply.Text)
		}
		return reply, nil
	}
	if err := ctx.Err(); err != nil {
		return contracts.ModelTurnReply{}, c.classify(ctx, req, err)
	}
	if !acc.stopped || acc.stopReason == "" {
		err := fmt.Errorf("stream ended without message_stop (%t) or a stop reason (%t)", acc.stopped, acc.stopReason != "")
		return contracts.ModelTurnReply{}, c.fail(req, err, failure.Truncated(err))
	}
	if acc.stopReason == anthropic.StopReasonModelContextWindowExceeded {
		err := errors.New("stop reason model_context_window_exceeded")
		return contracts.ModelTurnReply{}, c.fail(req, err, failure.ContextExceeded(err))
	}
	return acc.reply(), nil
}

func (c *Client) fail(req contracts.ModelTurnRequest, err error, f *failure.Error) *failure.Error {
	c.log.Warn("model call failed", "runId", req.RunID, "turn", req.Turn, "model", c.model,
		"reason", f.Reason, "retryable", f.Retryable, "err", err)
	return f
}

// classify turns a failed call into a Sonde failure by the error's type and
// status, never its text; the vendor's words go to the log.
func (c *Client) classify(ctx context.Context, req contracts.ModelTurnRequest, err error) *failure.Error {
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		c.log.Warn("model provider refused the call", "runId", req.RunID, "turn", req.Turn, "model", c.model,
			"status", apiErr.StatusCode, "type", apiErr.Type(), "code", apiErr.ErrorCode(), "vendorMessage", apiErr.Message)
		if tooLong(apiErr) {
			return c.fail(req, err, failure.ContextExceeded(err))
		}
		return c.fail(req, err, byType(apiErr.StatusCode, apiErr.Type(), string(apiErr.ErrorCode()), err))
	}
	if f := failure.Common(ctx, err); f != nil {
		return c.fail(req, err, f)
	}
	return c.fail(req, err, failure.New(contracts.ReasonModelUnavailable, true, "the model's answer could not be read", err))
}

// tooLong reports whether the API refused the prompt for the model's context
// window. The Messages API has no code for it: the refusal is a plain 400
// invalid_request_error whose only mark is its message ("prompt is too long:
// N tokens > M maximum", or, when max_tokens no longer fits beside the
// prompt, "input length and `max_tokens` exceed context limit: …"). So,
// alone among the classifications here, this one reads the vendor's words —
// only for that status and type, and only those two openings.
func tooLong(e *anthropic.Error) bool {
	if e.StatusCode != http.StatusBadRequest || e.Type() != shared.ErrorTypeInvalidRequestError {
		return false
	}
	return strings.HasPrefix(e.Message, "prompt is too long") ||
		strings.HasPrefix(e.Message, "input length and `max_tokens` exceed context limit")
}

// byType classifies an Anthropic error. A mid-stream error event arrives
// with the stream's status, 200, so its type decides.
func byType(status int, typ shared.ErrorType, code string, err error) *failure.Error {
	switch typ {
	case shared.ErrorTypeAuthenticationError:
		return failure.Status(http.StatusUnauthorized, err)
	case shared.ErrorTypePermissionError:
		return failure.Status(http.StatusForbidden, err)
	case shared.ErrorTypeNotFoundError:
		return failure.Status(http.StatusNotFound, err)
	case shared.ErrorTypeBillingError:
		return failure.New(contracts.ReasonModelRateLimited, false, "the model provider account has no credit left", err)
	case shared.ErrorTypeRateLimitError:
		if strings.HasSuffix(code, "spend_limit_reached") {
			return failure.New(contracts.ReasonModelRateLimited, false, "the model provider account has reached its spend limit", err)
		}
		return failure.Status(http.StatusTooManyRequests, err)
	case shared.ErrorTypeOverloadedError:
		return failure.New(contracts.ReasonModelRateLimited, true, "the model provider is overloaded", err)
	case shared.ErrorTypeTimeoutError:
		return failure.Status(http.StatusGatewayTimeout, err)
	case shared.ErrorTypeAPIError:
		return failure.Status(http.StatusInternalServerError, err)
	case "request_too_large":
		return failure.Status(http.StatusRequestEntityTooLarge, err)
	}
	if status == http.StatusOK {
		status = 0 // an unknown error event inside the stream
	}
	return failure.Status(status, err)
}

// accumulator folds the stream's events into one reply.
type accumulator struct {
	text       strings.Builder
	calls      map[int64]*contracts.ModelToolCall
	stopReason anthropic.StopReason
	stopped    bool
	usage      anthropic.MessageDeltaUsage
}

func (a *accumulator) add(ev anthropic.MessageStreamEventUnion) string {
	switch ev.Type {
	case "message_start":
		u := ev.Message.Usage
		a.usage.InputTokens, a.usage.CacheReadInputTokens, a.usage.CacheCreationInputTokens = u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens
		a.usage.OutputTokens = u.OutputTokens
	case "content_block_start":
		if ev.ContentBlock.Type == "tool_use" {
			if a.calls == nil {
				a.calls = map[int64]*contracts.ModelToolCall{}
			}
			a.calls[ev.Index] = &contracts.ModelToolCall{ID: ev.ContentBlock.ID, Name: ev.ContentBlock.Name}
		}
	case "content_block_delta":
		switch ev.Delta.Type {
		case "text_delta":
			a.text.WriteString(ev.Delta.Text)
			return ev.Delta.Text
		case "input_json_delta":
			if call := a.calls[ev.Index]; call != nil {
				call.Arguments += ev.Delta.PartialJSON
			}
		}
	case "message_delta":
		a.stopReason = ev.Delta.StopReason
		// message_delta's usage is cumulative; input counts appear only when
		// the server revises them.
		a.usage.OutputTokens = ev.Usage.OutputTokens
		if ev.Usage.InputTokens > 0 {
			a.usage.InputTokens = ev.Usage.InputTokens
		}
		if ev.Usage.CacheReadInputTokens > 0 {
			a.usage.CacheReadInputTokens = ev.Usage.CacheReadInputTokens
		}
		if ev.Usage.CacheCreationInputTokens > 0 {
			a.usage.CacheCreationInputTokens = ev.Usage.CacheCreationInputTokens
		}
	case "message_stop":
		a.stopped = true
	}
	return ""
}

func (a *accumulator) reply() contracts.ModelTurnReply {
	r := contracts.ModelTurnReply{
		Text:         a.text.String(),
		FinishReason: finishReason(a.stopReason),
		Usage:        usage(a.usage.InputTokens, a.usage.CacheReadInputTokens, a.usage.CacheCreationInputTokens, a.usage.OutputTokens),
	}
	idx := make([]int64, 0, len(a.calls))
	for i := range a.calls {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(i, j int) bool { return idx[i] < idx[j] })
	for _, i := range idx {
		call := *a.calls[i]
		if strings.TrimSpace(call.Arguments) == "" {
			call.Arguments = "{}" // a tool called with no input streams no delta
		}
		r.ToolCalls = append(r.ToolCalls, call)
	}
	return r
}

// usage reports the whole prompt as input (Anthropic counts the cached and
// cache-written parts apart from input_tokens) and the part read from the
// cache as cached.
func usage(input, cacheRead, cacheWrite, output int64) contracts.Usage {
	return contracts.Usage{InputTokens: input + cacheRead + cacheWrite, OutputTokens: output, CachedTokens: cacheRead}
}

// finishReason names the stop reason in the words every provider's reply
// uses: "stop", "tool_calls", "length", or the vendor's own.
func finishReason(r anthropic.StopReason) string {
	switch r {
	case anthropic.StopReasonEndTurn, anthropic.StopReasonStopSequence:
		return "stop"
	case anthropic.StopReasonToolUse:
		return "tool_calls"
	case anthropic.StopReasonMaxTokens:
		return contracts.FinishLength
	}
	return string(r)
}

// fromMessage reads a non-streamed Message.
func fromMessage(m anthropic.Message) contracts.ModelTurnReply {
	r := contracts.ModelTurnReply{
		FinishReason: finishReason(m.StopReason),
		Usage:        usage(m.Usage.InputTokens, m.Usage.CacheReadInputTokens, m.Usage.CacheCreationInputTokens, m.Usage.OutputTokens),
	}
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			r.Text += b.Text
		case "tool_use":
			args := string(b.Input)
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			r.ToolCalls = append(r.ToolCalls, contracts.ModelToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	return r
}
