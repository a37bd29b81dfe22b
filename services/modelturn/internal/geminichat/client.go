// Package geminichat drives one model turn over the Gemini API with
// google.golang.org/genai: a streamed generateContent call (alt=sse), tools
// declared with their JSON Schemas, text deltas handed on as they arrive,
// and every way the call can fail classified into a Sonde failure reason by
// the error's code, status and detail types.
package geminichat

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/modelturn/internal/failure"
	"github.com/sondehq/sonde/services/modelturn/internal/wire"
	"google.golang.org/genai"
)

// DefaultBaseURL is the Gemini API's own endpoint.
const DefaultBaseURL = "https://generativelanguage.googleapis.com/"

// noKey is handed to the SDK, which refuses to start without a key, when
// none is configured (a proxy that needs none); the transport removes it.
const noKey = "sonde-no-key"

// Config is what a Client needs; nothing is read from the environment.
type Config struct {
	Model string
	// APIKey is sent as x-goog-api-key; empty sends none.
	APIKey string
	// BaseURL is the API root, e.g. "http://localhost:8080"; empty means
	// DefaultBaseURL.
	BaseURL string
	// Temperature is the sampling temperature sent with every call; nil
	// sends none (the model's default).
	Temperature *float64
	Logger      *slog.Logger
}

// Client makes model turns against one model.
type Client struct {
	models      *genai.Models
	model       string
	temperature *float32
	log         *slog.Logger
}

// New validates cfg and returns a Client.
//
// genai.NewClient fills what the config leaves empty from GOOGLE_API_KEY,
// GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_CLOUD_PROJECT,
// GOOGLE_CLOUD_LOCATION and GOOGLE_GEMINI_BASE_URL. So the backend, the base
// URL and the key are always given explicitly, and the transport sets the
// key header to exactly the configured key (or removes it): no ambient
// variable can authenticate or redirect a call. The SDK's retries are off
// by default (no RetryOptions).
func New(cfg Config) (*Client, error) {
	a, err := wire.NewAdapter("geminichat", cfg.Model, cfg.BaseURL, DefaultBaseURL,
		wire.Credential{Header: "X-Goog-Api-Key", Value: cfg.APIKey, Strip: []string{"X-Goog-Api-Key", "Authorization"}}, nil, cfg.Logger)
	if err != nil {
		return nil, err
	}
	key := noKey
	if cfg.APIKey != "" {
		key = cfg.APIKey
	}
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:      key,
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  a.HTTP,
		HTTPOptions: genai.HTTPOptions{BaseURL: strings.TrimSuffix(a.BaseURL.String(), "/") + "/"},
	})
	if err != nil {
		return nil, fmt.Errorf("geminichat: %w", err)
	}
	c := &Client{models: client.Models, model: cfg.Model, log: a.Log}
	if cfg.Temperature != nil {
		t := float32(*cfg.Temperature)
		c.temperature = &t
	}
	return c, nil
}

// Turn makes one streamed call for req, bounded by ctx. onDelta (may be nil)
// receives each fragment of text as it arrives. A failed call returns a
// *failure.Error.
func (c *Client) Turn(ctx context.Context, req contracts.ModelTurnRequest, onDelta func(text string)) (contracts.ModelTurnReply, error) {
	contents, config, err := params(req)
	if err != nil {
		return contracts.ModelTurnReply{}, failure.New(contracts.ReasonInternal, false, "the turn request could not be put to the model", err)
	}
	config.Temperature = c.temperature
	ctx, w := wire.Ensure(ctx)
	acc := accumulator{turn: req.Turn}
	for resp, err := range c.models.GenerateContentStream(ctx, c.model, contents, config) {
		if err != nil {
			if body := w.Buffered(); body != nil {
				return c.buffered(req, body, onDelta)
			}
			return contracts.ModelTurnReply{}, c.classify(ctx, req, err)
		}
		if text := acc.add(resp); text != "" && onDelta != nil {
			onDelta(text)
		}
	}
	if body := w.Buffered(); body != nil {
		return c.buffered(req, body, onDelta)
	}
	if err := ctx.Err(); err != nil {
		return contracts.ModelTurnReply{}, c.classify(ctx, req, err)
	}
	if acc.finish == "" {
		err := errors.New("stream ended without a candidate's finishReason")
		return contracts.ModelTurnReply{}, c.fail(req, err, failure.Truncated(err))
	}
	return acc.reply(), nil
}

// buffered reads a streaming request's answer that came as one JSON
// document (an object, or the array the API sends without alt=sse).
func (c *Client) buffered(req contracts.ModelTurnRequest, body []byte, onDelta func(string)) (contracts.ModelTurnReply, error) {
	c.log.Warn("model server answered a streaming request with one buffered body", "runId", req.RunID, "turn", req.Turn, "model", c.model)
	var many []*genai.GenerateContentResponse
	if err := json.Unmarshal(body, &many); err != nil {
		var one genai.GenerateContentResponse
		if err := json.Unmarshal(body, &one); err != nil {
			return contracts.ModelTurnReply{}, c.fail(req, err, failure.New(contracts.ReasonModelUnavailable, true,
				"the model server answered with a body Sonde could not read", err))
		}
		many = []*genai.GenerateContentResponse{&one}
	}
	acc := accumulator{turn: req.Turn}
	for _, r := range many {
		acc.add(r)
	}
	if acc.finish == "" {
		err := errors.New("buffered body without a finishReason")
		return contracts.ModelTurnReply{}, c.fail(req, err, failure.New(contracts.ReasonModelUnavailable, true,
			"the model server answered with a body Sonde could not read", err))
	}
	reply := acc.reply()
	if reply.Text != "" && onDelta != nil {
		onDelta(reply.Text)
	}
	return reply, nil
}

func (c *Client) fail(req contracts.ModelTurnRequest, err error, f *failure.Error) *failure.Error {
	c.log.Warn("model call failed", "runId", req.RunID, "turn", req.Turn, "model", c.model,
		"reason", f.Reason, "retryable", f.Retryable, "err", err)
	return f
}

// classify turns a failed call into a Sonde failure by the error's code,
// status and detail types, never its text.
func (c *Client) classify(ctx context.Context, req contracts.ModelTurnRequest, err error) *failure.Error {
	var apiErr genai.APIError
	if errors.As(err, &apiErr) {
		c.log.Warn("model provider refused the call", "runId", req.RunID, "turn", req.Turn, "model", c.model,
			"code", apiErr.Code, "status", apiErr.Status, "vendorMessage", apiErr.Message)
		return c.fail(req, err, byCode(apiErr, err))
	}
	if f := failure.Common(ctx, err); f != nil {
		return c.fail(req, err, f)
	}
	return c.fail(req, err, failure.New(contracts.ReasonModelUnavailable, true, "the model's answer could not be read", err))
}

// byCode classifies a Gemini API error. A bad key is HTTP 400 with an
// ErrorInfo detail whose reason is API_KEY_INVALID; a 429 whose QuotaFailure
// names a per-day quota is an exhausted quota that waiting minutes will not
// clear.
func byCode(e genai.APIError, err error) *failure.Error {
	reasons, quotas := details(e.Details)
	for _, r := range reasons {
		if r == "API_KEY_INVALID" || r == "API_KEY_SERVICE_BLOCKED" {
			return failure.Status(http.StatusUnauthorized, err)
		}
	}
	if tooLong(e) || e.Code == http.StatusRequestEntityTooLarge {
		return failure.ContextExceeded(err)
	}
	code := e.Code
	switch e.Status {
	case "UNAUTHENTICATED":
		code = http.StatusUnauthorized
	case "PERMISSION_DENIED":
		code = http.StatusForbidden
	case "NOT_FOUND":
		code = http.StatusNotFound
	case "RESOURCE_EXHAUSTED":
		code = http.StatusTooManyRequests
	case "DEADLINE_EXCEEDED":
		code = http.StatusGatewayTimeout
	case "UNAVAILABLE", "INTERNAL":
		code = http.StatusServiceUnavailable
	}
	if code == http.StatusTooManyRequests {
		for _, q := range quotas {
			if strings.Contains(q, "PerDay") {
				return failure.New(contracts.ReasonModelRateLimited, false, "the model provider's daily quota is used up", err)
			}
		}
	}
	return failure.Status(code, err)
}

// tooLong reports whether the API refused the prompt for the model's token
// limit. Gemini gives that refusal no reason of its own: it is a plain 400
// INVALID_ARGUMENT whose only mark is its message ("The input token count
// (N) exceeds the maximum number of tokens allowed (M).", or, for a body
// over the API's size limit, "Request payload size exceeds the limit: …").
// So, alone among the classifications here, this one reads the vendor's
// words — only for that status, and only those two phrases.
func tooLong(e genai.APIError) bool {
	return e.Code == http.StatusBadRequest && e.Status == "INVALID_ARGUMENT" &&
		(strings.Contains(e.Message, "exceeds the maximum number of tokens allowed") ||
			strings.HasPrefix(e.Message, "Request payload size exceeds the limit"))
}

// details returns the ErrorInfo reasons and QuotaFailure quota ids of an
// error's details.
func details(ds []map[string]any) (reasons, quotas []string) {
	for _, d := range ds {
		switch t, _ := d["@type"].(string); {
		case strings.HasSuffix(t, "google.rpc.ErrorInfo"):
			if r, ok := d["reason"].(string); ok {
				reasons = append(reasons, r)
			}
		case strings.HasSuffix(t, "google.rpc.QuotaFailure"):
			vs, _ := d["violations"].([]any)
			for _, v := range vs {
				if m, ok := v.(map[string]any); ok {
					if q, ok := m["quotaId"].(string); ok {
						quotas = append(quotas, q)
					}
				}
			}
		}
	}
	return reasons, quotas
}

// accumulator folds the stream's responses (candidate 0) into one reply.
type accumulator struct {
	turn   int // the run's turn, for the ids of calls the server gave none
	text   strings.Builder
	calls  []contracts.ModelToolCall
	finish genai.FinishReason
	usage  contracts.Usage
}

func (a *accumulator) add(r *genai.GenerateContentResponse) string {
	if r == nil {
		return ""
	}
	if u := r.UsageMetadata; u != nil {
		a.usage = contracts.Usage{
			InputTokens:  int64(u.PromptTokenCount),
			OutputTokens: int64(u.CandidatesTokenCount) + int64(u.ThoughtsTokenCount),
			CachedTokens: int64(u.CachedContentTokenCount),
		}
	}
	if len(r.Candidates) == 0 || r.Candidates[0] == nil {
		return ""
	}
	cand := r.Candidates[0]
	var added strings.Builder
	if cand.Content != nil {
		for _, p := range cand.Content.Parts {
			switch {
			case p == nil || p.Thought:
			case p.FunctionCall != nil:
				args, err := json.Marshal(p.FunctionCall.Args)
				if err != nil || p.FunctionCall.Args == nil {
					args = []byte("{}")
				}
				id := p.FunctionCall.ID
				if id == "" {
					// No id from the server: one unique in the run, so a later
					// turn's call is never taken for an earlier one's.
					id = "call_" + strconv.Itoa(a.turn) + "_" + strconv.Itoa(len(a.calls))
				}
				// The part's thoughtSignature travels with the call and is
				// sent back on it (Gemini 3 refuses a history without it).
				var sig string
				if len(p.ThoughtSignature) > 0 {
					sig = base64.StdEncoding.EncodeToString(p.ThoughtSignature)
				}
				a.calls = append(a.calls, contracts.ModelToolCall{ID: id, Name: p.FunctionCall.Name, Arguments: string(args), Signature: sig})
			case p.Text != "":
				a.text.WriteString(p.Text)
				added.WriteString(p.Text)
			}
		}
	}
	if cand.FinishReason != "" {
		a.finish = cand.FinishReason
	}
	return added.String()
}

func (a *accumulator) reply() contracts.ModelTurnReply {
	r := contracts.ModelTurnReply{Text: a.text.String(), ToolCalls: a.calls, Usage: a.usage}
	switch {
	case a.finish == genai.FinishReasonStop && len(a.calls) > 0:
		r.FinishReason = "tool_calls" // Gemini says STOP after calls too
	case a.finish == genai.FinishReasonStop:
		r.FinishReason = "stop"
	case a.finish == genai.FinishReasonMaxTokens:
		r.FinishReason = contracts.FinishLength
	case a.finish == genai.FinishReasonMalformedFunctionCall:
		// The model wrote a call Gemini itself could not read; what it
		// wrote is in the candidate's finishMessage, which is not a reply.
		r.FinishReason = contracts.FinishMalformedCall
	default:
		r.FinishReason = strings.ToLower(string(a.finish))
	}
	return r
}
