// Package ollamachat drives one model turn over Ollama's native chat API
// (POST /api/chat) with the ollama api package: a streamed call (NDJSON),
// tools declared from their JSON Schemas, a context size set explicitly and
// truncation switched off, so a transcript longer than the context is
// refused by the server instead of being silently cut.
package ollamachat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/ollama/ollama/api"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/modelturn/internal/failure"
	"github.com/sondehq/sonde/services/modelturn/internal/wire"
)

// DefaultBaseURL is a local Ollama server.
const DefaultBaseURL = "http://127.0.0.1:11434"

// DefaultNumCtx is the context size asked for when Config.NumCtx is zero.
// Ollama's own default (a few thousand tokens on many builds) is smaller
// than one investigation's transcript.
const DefaultNumCtx = 32768

// Config is what a Client needs; nothing is read from the environment.
type Config struct {
	Model string
	// APIKey is sent as a bearer token (Ollama behind a proxy, or ollama.com);
	// empty sends none.
	APIKey string
	// BaseURL is the server root, e.g. "http://localhost:11434"; empty means
	// DefaultBaseURL.
	BaseURL string
	// NumCtx is the context window asked for, in tokens.
	NumCtx int
	// Temperature is the sampling temperature sent with every call; nil
	// sends none (the model's default).
	Temperature *float64
	Logger      *slog.Logger
}

// Client makes model turns against one model.
type Client struct {
	api         *api.Client
	model       string
	numCtx      int
	temperature *float64
	log         *slog.Logger
}

// New validates cfg and returns a Client. api.ClientFromEnvironment reads
// OLLAMA_HOST; the client is built from the configured URL instead, and the
// transport sets the Authorization header to exactly the configured key.
func New(cfg Config) (*Client, error) {
	var bearer string
	if cfg.APIKey != "" {
		bearer = "Bearer " + cfg.APIKey
	}
	a, err := wire.NewAdapter("ollamachat", cfg.Model, strings.TrimSuffix(cfg.BaseURL, "/"), DefaultBaseURL,
		wire.Credential{Header: "Authorization", Value: bearer, Strip: []string{"Authorization"}}, nil, cfg.Logger)
	if err != nil {
		return nil, err
	}
	numCtx := cfg.NumCtx
	if numCtx <= 0 {
		numCtx = DefaultNumCtx
	}
	return &Client{api: api.NewClient(a.BaseURL, a.HTTP), model: cfg.Model, numCtx: numCtx,
		temperature: cfg.Temperature, log: a.Log}, nil
}

// Turn makes one streamed chat call for req, bounded by ctx. onDelta (may be
// nil) receives each fragment of text as it arrives. A failed call returns a
// *failure.Error.
func (c *Client) Turn(ctx context.Context, req contracts.ModelTurnRequest, onDelta func(text string)) (contracts.ModelTurnReply, error) {
	chat, err := c.request(req)
	if err != nil {
		return contracts.ModelTurnReply{}, failure.New(contracts.ReasonInternal, false, "the turn request could not be put to the model", err)
	}
	ctx, w := wire.Ensure(ctx)
	acc := accumulator{turn: req.Turn}
	err = c.api.Chat(ctx, chat, func(r api.ChatResponse) error {
		if text := acc.add(r); text != "" && onDelta != nil {
			onDelta(text)
		}
		return nil
	})
	if err != nil {
		return contracts.ModelTurnReply{}, c.classify(ctx, req, err)
	}
	if body := w.Buffered(); body != nil {
		c.log.Warn("model server answered a streaming request with one buffered body", "runId", req.RunID, "turn", req.Turn, "model", c.model)
		var r api.ChatResponse
		if err := json.Unmarshal(body, &r); err != nil || !r.Done {
			return contracts.ModelTurnReply{}, c.fail(req, err, failure.New(contracts.ReasonModelUnavailable, true,
				"the model server answered with a body Sonde could not read", err))
		}
		acc = accumulator{turn: req.Turn}
		acc.add(r)
		reply := acc.reply()
		if reply.Text != "" && onDelta != nil {
			onDelta(reply.Text)
		}
		return reply, nil
	}
	if err := ctx.Err(); err != nil {
		return contracts.ModelTurnReply{}, c.classify(ctx, req, err)
	}
	if !acc.done {
		err := errors.New(`stream ended without a "done": true line`)
		return contracts.ModelTurnReply{}, c.fail(req, err, failure.Truncated(err))
	}
	return acc.reply(), nil
}

func (c *Client) fail(req contracts.ModelTurnRequest, err error, f *failure.Error) *failure.Error {
	c.log.Warn("model call failed", "runId", req.RunID, "turn", req.Turn, "model", c.model,
		"reason", f.Reason, "retryable", f.Retryable, "err", err)
	return f
}

// classify turns a failed call into a Sonde failure by the error's type and
// status. Ollama's errors carry a status and a sentence only, so the status
// decides; an error line inside a 200 stream is an untyped error and is
// reported unavailable, retryable.
func (c *Client) classify(ctx context.Context, req contracts.ModelTurnRequest, err error) *failure.Error {
	var statusErr api.StatusError
	var authErr api.AuthorizationError
	switch {
	case errors.As(err, &statusErr):
		c.log.Warn("model provider refused the call", "runId", req.RunID, "turn", req.Turn, "model", c.model,
			"status", statusErr.StatusCode, "vendorMessage", statusErr.ErrorMessage)
		if tooLong(statusErr) {
			return c.fail(req, err, failure.ContextExceeded(err))
		}
		return c.fail(req, err, failure.Status(statusErr.StatusCode, err))
	case errors.As(err, &authErr):
		return c.fail(req, err, failure.Status(authErr.StatusCode, err))
	}
	if f := failure.Common(ctx, err); f != nil {
		return c.fail(req, err, f)
	}
	return c.fail(req, err, failure.New(contracts.ReasonModelUnavailable, true, "the model's stream carried an error", err))
}

// tooLong reports whether the server refused the prompt for num_ctx. Ollama's
// errors are a status and a sentence, nothing more; with truncation off, a
// prompt over num_ctx is refused with HTTP 400 and the runner's sentence
// "the input length exceeds the context length". So this one check reads
// the vendor's words — for that status only, and only that sentence whole.
func tooLong(e api.StatusError) bool {
	return e.StatusCode == http.StatusBadRequest && e.ErrorMessage == ollamaTooLong
}

// ollamaTooLong is the sentence Ollama's runners refuse a prompt over
// num_ctx with (runner/ollamarunner and runner/llamarunner, errorInputTooLong).
const ollamaTooLong = "the input length exceeds the context length"

// request maps a turn request onto a chat request: streamed, with num_ctx
// set and truncate and shift off.
func (c *Client) request(req contracts.ModelTurnRequest) (*api.ChatRequest, error) {
	stream, off := true, false
	out := &api.ChatRequest{
		Model: c.model, Stream: &stream, Truncate: &off, Shift: &off,
		Options: map[string]any{"num_ctx": c.numCtx},
	}
	if c.temperature != nil {
		out.Options["temperature"] = *c.temperature
	}
	if len(req.Messages) == 0 {
		return nil, errors.New("the transcript is empty")
	}
	names := map[string]string{}
	for i, m := range req.Messages {
		msg := api.Message{Role: string(m.Role), Content: m.Content}
		switch m.Role {
		case contracts.RoleSystem, contracts.RoleUser:
		case contracts.RoleAssistant:
			for n, tc := range m.ToolCalls {
				args := api.NewToolCallFunctionArguments()
				if err := json.Unmarshal([]byte(tc.Arguments), &args); err != nil {
					args = api.NewToolCallFunctionArguments()
				}
				names[tc.ID] = tc.Name
				msg.ToolCalls = append(msg.ToolCalls, api.ToolCall{ID: tc.ID, Function: api.ToolCallFunction{Index: n, Name: tc.Name, Arguments: args}})
			}
		case contracts.RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("message %d: a tool message names no call", i)
			}
			msg.ToolCallID, msg.ToolName = m.ToolCallID, names[m.ToolCallID]
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
		out.Messages = append(out.Messages, msg)
	}
	for _, t := range req.Tools {
		fn := api.ToolFunction{Name: t.Name, Description: t.Description}
		fn.Parameters.Type = "object"
		if len(t.Parameters) > 0 {
			if err := json.Unmarshal(t.Parameters, &fn.Parameters); err != nil {
				return nil, fmt.Errorf("tool %s: parameters are not a JSON Schema object: %w", t.Name, err)
			}
		}
		if fn.Parameters.Properties == nil {
			fn.Parameters.Properties = api.NewToolPropertiesMap()
		}
		out.Tools = append(out.Tools, api.Tool{Type: "function", Function: fn})
	}
	return out, nil
}

// accumulator folds the stream's lines into one reply.
type accumulator struct {
	turn   int // the run's turn, for the ids of calls the server gave none
	text   strings.Builder
	calls  []contracts.ModelToolCall
	done   bool
	reason string
	usage  contracts.Usage
}

func (a *accumulator) add(r api.ChatResponse) string {
	a.text.WriteString(r.Message.Content)
	for _, tc := range r.Message.ToolCalls {
		args, err := json.Marshal(tc.Function.Arguments)
		if err != nil || string(args) == "null" {
			args = []byte("{}")
		}
		id := tc.ID
		if id == "" {
			// No id from the server: one unique in the run, so a later
			// turn's call is never taken for an earlier one's.
			id = "call_" + strconv.Itoa(a.turn) + "_" + strconv.Itoa(len(a.calls))
		}
		a.calls = append(a.calls, contracts.ModelToolCall{ID: id, Name: tc.Function.Name, Arguments: string(args)})
	}
	if r.Done {
		a.done, a.reason = true, r.DoneReason
		a.usage = contracts.Usage{InputTokens: int64(r.PromptEvalCount), OutputTokens: int64(r.EvalCount)}
	}
	return r.Message.Content
}

func (a *accumulator) reply() contracts.ModelTurnReply {
	r := contracts.ModelTurnReply{Text: a.text.String(), ToolCalls: a.calls, Usage: a.usage, FinishReason: a.reason}
	switch {
	case a.reason == "length":
		// num_predict reached: the turn was cut at the output limit.
		r.FinishReason = contracts.FinishLength
	case (a.reason == "stop" || a.reason == "") && len(a.calls) > 0:
		r.FinishReason = "tool_calls"
	case a.reason == "":
		r.FinishReason = "stop"
	}
	return r
}
