// Package failure is the typed error a model adapter returns when a call
// fails: a Sonde failure reason, whether trying again can help, one sentence
// Sonde wrote, and the underlying error for the log.
package failure

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/sondehq/sonde/contracts"
)

// Error is a classified model-call failure. Message is safe to show a caller;
// Err (the vendor's error, with its text) is for the log only.
type Error struct {
	Reason    contracts.FailureReason
	Retryable bool
	Message   string
	Err       error
	// Refused marks the provider refusing the request itself with a 4xx
	// status that says nothing about credentials, the model's name, volume
	// or size.
	Refused bool
}

// New returns a classified failure wrapping err.
func New(reason contracts.FailureReason, retryable bool, message string, err error) *Error {
	return &Error{Reason: reason, Retryable: retryable, Message: message, Err: err}
}

// Error returns the reason and Sonde's message; the wrapped error's text is
// left out so that printing a failure never leaks a vendor's message.
func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Reason, e.Message) }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Model returns the failure as the contract carries it.
func (e *Error) Model() *contracts.ModelFailure {
	return &contracts.ModelFailure{Reason: e.Reason, Retryable: e.Retryable, Message: e.Message}
}

// As returns err's classified failure, or an internal one when err carries
// none.
func As(err error) *Error {
	var f *Error
	if errors.As(err, &f) {
		return f
	}
	return New(contracts.ReasonInternal, false, "the model call failed inside Sonde", err)
}

// Common classifies what every vendor's call can meet outside the vendor's
// own error types: the turn's deadline, a cancelled call, a network failure.
// It returns nil for anything else.
func Common(ctx context.Context, err error) *Error {
	var netErr net.Error
	var opErr *net.OpError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return New(contracts.ReasonModelTimeout, true, "the model did not finish within the time this turn allows", err)
	case errors.Is(err, context.Canceled):
		return New(contracts.ReasonModelUnavailable, true, "the model call was cancelled before it finished", err)
	case errors.As(err, &opErr), errors.As(err, &netErr):
		return New(contracts.ReasonModelUnavailable, true, "the model server could not be reached", err)
	}
	return nil
}

// Status classifies an HTTP status on its own, for vendors whose errors
// carry nothing finer.
func Status(status int, err error) *Error {
	switch {
	case status == http.StatusUnauthorized:
		return New(contracts.ReasonModelUnauthorized, false, "the model provider rejected the API key (LLM_API_KEY)", err)
	case status == http.StatusForbidden:
		return New(contracts.ReasonModelUnauthorized, false, "the API key is not permitted to use this model", err)
	case status == http.StatusNotFound:
		return New(contracts.ReasonModelNotFound, false, "the model provider does not know the configured model (LLM_MODEL)", err)
	case status == http.StatusRequestEntityTooLarge:
		return New(contracts.ReasonModelContextExceeded, false, "the transcript is larger than the model provider accepts", err)
	case status == http.StatusTooManyRequests:
		return New(contracts.ReasonModelRateLimited, true, "the model provider is rate limiting requests", err)
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		return New(contracts.ReasonModelTimeout, true, "the model provider timed out", err)
	case status >= 500:
		return New(contracts.ReasonModelUnavailable, true, fmt.Sprintf("the model provider failed (HTTP %d)", status), err)
	case status == 0:
		return New(contracts.ReasonModelUnavailable, true, "the model's stream carried an error", err)
	default:
		f := New(contracts.ReasonModelUnavailable, false, fmt.Sprintf("the model provider refused the request (HTTP %d)", status), err)
		f.Refused = true
		return f
	}
}

// ContextExceeded is the failure of a call the provider refused because the
// transcript does not fit the model's context window: not retryable, since
// the same transcript will not fit next time either.
func ContextExceeded(err error) *Error {
	return New(contracts.ReasonModelContextExceeded, false, "the transcript is longer than the model's context window", err)
}

// Truncated is the failure of a stream that ended without its terminal
// marker.
func Truncated(err error) *Error {
	return New(contracts.ReasonModelUnavailable, true, "the model's stream was cut short before it finished", err)
}

// IsRefusal reports whether f is the provider refusing the request itself
// (a 4xx that is neither about credentials, the model's name, volume nor
// size): what an endpoint that cannot take tools answers.
func IsRefusal(f *Error) bool {
	return f.Reason == contracts.ReasonModelUnavailable && !f.Retryable && f.Refused
}
