// Package failure is the typed error a model adapter returns when a call
// fails: a Sonde failure reason, whether trying again can help, one sentence
// Sonde wrote, and the underlying error for the log.
package failure

import (
	"errors"
	"fmt"

	"github.com/sondehq/sonde/contracts"
)

// Error is a classified model-call failure. Message is safe to show a caller;
// Err (the vendor's error, with its text) is for the log only.
type Error struct {
	Reason    contracts.FailureReason
	Retryable bool
	Message   string
	Err       error
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
