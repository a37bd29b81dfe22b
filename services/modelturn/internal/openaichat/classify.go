package openaichat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/modelturn/internal/failure"
)

// classify turns a failed call into a Sonde failure by the error's type and
// code, never its text, and logs the vendor's own words.
func (c *Client) classify(ctx context.Context, req contracts.ModelTurnRequest, err error) *failure.Error {
	var apiErr *openai.Error
	var streamErr *ssestream.StreamError
	var netErr net.Error
	var opErr *net.OpError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return c.fail(req, err, failure.New(contracts.ReasonModelTimeout, true,
			"the model did not finish within the time this turn allows", err))
	case errors.Is(err, context.Canceled):
		return c.fail(req, err, failure.New(contracts.ReasonModelUnavailable, true,
			"the model call was cancelled before it finished", err))
	case errors.As(err, &apiErr):
		c.log.Warn("model provider refused the call",
			"runId", req.RunID, "turn", req.Turn, "model", c.model, "status", apiErr.StatusCode,
			"code", apiErr.Code, "type", apiErr.Type, "vendorMessage", apiErr.Message)
		return c.fail(req, err, byStatus(apiErr.StatusCode, apiErr.Code, apiErr.Type, err))
	case errors.As(err, &streamErr):
		// An error event inside a 200 stream: {"error":{…}} in a data line.
		var body struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
				Code    any    `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(streamErr.Event.Data, &body)
		code := ""
		if s, ok := body.Error.Code.(string); ok {
			code = s
		}
		c.log.Warn("model stream carried an error",
			"runId", req.RunID, "turn", req.Turn, "model", c.model,
			"code", code, "type", body.Error.Type, "vendorMessage", body.Error.Message)
		f := byStatus(0, code, body.Error.Type, err)
		return c.fail(req, err, f)
	case errors.As(err, &opErr), errors.As(err, &netErr):
		return c.fail(req, err, failure.New(contracts.ReasonModelUnavailable, true,
			"the model server could not be reached", err))
	default:
		return c.fail(req, err, failure.New(contracts.ReasonModelUnavailable, true,
			"the model's answer could not be read", err))
	}
}

// byStatus classifies an API error by HTTP status (0 when the error arrived
// inside a stream) and the vendor's error code and type.
func byStatus(status int, code, typ string, err error) *failure.Error {
	switch {
	case code == "invalid_api_key" || status == http.StatusUnauthorized:
		return failure.New(contracts.ReasonModelUnauthorized, false,
			"the model provider rejected the API key (LLM_API_KEY)", err)
	case status == http.StatusForbidden:
		return failure.New(contracts.ReasonModelUnauthorized, false,
			"the API key is not permitted to use this model", err)
	case code == "model_not_found" || status == http.StatusNotFound:
		return failure.New(contracts.ReasonModelNotFound, false,
			"the model provider does not know the configured model (LLM_MODEL)", err)
	case code == "context_length_exceeded" || typ == "exceed_context_size_error" || status == http.StatusRequestEntityTooLarge:
		// OpenAI's code; llama.cpp's server types the same refusal
		// exceed_context_size_error; a proxy in front of either refuses
		// a body it will not take with 413.
		return failure.ContextExceeded(err)
	case code == "insufficient_quota" || typ == "insufficient_quota":
		return failure.New(contracts.ReasonModelRateLimited, false,
			"the model provider account has no quota left", err)
	case status == http.StatusTooManyRequests || code == "rate_limit_exceeded":
		return failure.New(contracts.ReasonModelRateLimited, true,
			"the model provider is rate limiting requests", err)
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		return failure.New(contracts.ReasonModelTimeout, true,
			"the model provider timed out", err)
	case status >= 500 || status == 0:
		return failure.New(contracts.ReasonModelUnavailable, true,
			fmt.Sprintf("the model provider failed (%s)", statusText(status)), err)
	default:
		f := failure.New(contracts.ReasonModelUnavailable, false,
			fmt.Sprintf("the model provider refused the request (%s)", statusText(status)), err)
		f.Refused = true
		return f
	}
}

func statusText(status int) string {
	if status == 0 {
		return "an error inside the stream"
	}
	return fmt.Sprintf("HTTP %d", status)
}
