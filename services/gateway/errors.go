package gateway

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/sondehq/sonde/contracts"
)

// ErrNoConn is returned by New without a NATS connection.
var ErrNoConn = errors.New("gateway: a NATS connection is required")

// InsecureListenError is returned by New when the gateway would listen beyond
// this machine with no API tokens configured: every caller would be admin.
type InsecureListenError struct {
	// Listen is the refused address.
	Listen string
}

func (e *InsecureListenError) Error() string {
	return fmt.Sprintf("gateway: refusing to listen on %s without API tokens: "+
		"set SONDE_API_TOKENS (token=actor:role,…) or listen on a loopback address such as 127.0.0.1", e.Listen)
}

// TokenError reports a malformed SONDE_API_TOKENS entry. It names the entry by
// position and never repeats the token, which is a secret.
type TokenError struct {
	// Entry is the 1-based position of the entry in the list.
	Entry int
	// Reason says what is wrong with it.
	Reason string
}

func (e *TokenError) Error() string {
	return fmt.Sprintf("gateway: SONDE_API_TOKENS entry %d: %s (want token=actor:role with role admin or member)", e.Entry, e.Reason)
}

// httpError is an answer the error handler writes as
// {"error":{"code":…,"message":…,"fix":…}} with status.
type httpError struct {
	status int
	body   contracts.Error
}

func (e *httpError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.status, e.body.Code, e.body.Message)
}

// fail builds an httpError.
func fail(status int, code contracts.Code, message, fix string) error {
	return &httpError{status: status, body: contracts.Error{Code: code, Message: message, Fix: fix}}
}

func badRequest(code contracts.Code, message, fix string) error {
	return fail(http.StatusBadRequest, code, message, fix)
}

func unavailable(message, fix string) error {
	return fail(http.StatusServiceUnavailable, contracts.CodeUnavailable, message, fix)
}

// runNotFound is the one answer for a run that does not exist and for a run
// another actor opened: a caller must not learn that a foreign run exists.
func runNotFound(runID string) error {
	return fail(http.StatusNotFound, contracts.CodeRunNotFound,
		fmt.Sprintf("no run %q is visible to you", runID),
		"check the id returned by POST /api/agent/runs")
}

// relay turns an Error a service replied with into an HTTP answer.
func relay(e *contracts.Error) error {
	status := http.StatusBadRequest
	switch e.Code {
	case contracts.CodeRunExists, contracts.CodeRunFinished:
		status = http.StatusConflict
	case contracts.CodeRunNotFound:
		status = http.StatusNotFound
	case contracts.CodeUnavailable:
		status = http.StatusServiceUnavailable
	case contracts.CodeInternal:
		status = http.StatusInternalServerError
	}
	return &httpError{status: status, body: *e}
}
