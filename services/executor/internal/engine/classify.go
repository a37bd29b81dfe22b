package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// Interrupted classifies the failures every engine shares, whatever its
// driver: the statement's deadline, the caller's cancellation, and text
// that is not valid UTF-8. It returns nil for anything else, which the
// engine classifies by its driver's own error type.
func Interrupted(err error, timeout time.Duration) *contracts.DBError {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return TimedOut(timeout)
	case errors.Is(err, context.Canceled):
		return &contracts.DBError{Class: contracts.DBCancelled, Message: "the statement was cancelled before it finished"}
	case errors.Is(err, rowset.ErrInvalidUTF8):
		return &contracts.DBError{Class: contracts.DBOther, Message: err.Error() +
			"; read the column as bytes instead, e.g. CAST(col AS BLOB) or hex(col)"}
	}
	return nil
}

// TimedOut is the error of a statement stopped at its timeout.
func TimedOut(timeout time.Duration) *contracts.DBError {
	return &contracts.DBError{Class: contracts.DBTimeout,
		Message: fmt.Sprintf("the statement ran past its %s timeout and was interrupted", timeout)}
}

// ErrConnectionLost marks an error that means the connection's database no
// longer answers — a server that closed the connection or cannot be
// reached, a file removed or replaced — rather than a failure of the
// operation's statement. An engine that knows this by its driver's types
// returns Lost(…); the executor then marks the connection unavailable and
// opens it again in the background, and the caller is answered
// contracts.RefuseConnectionUnavailable, never the driver's text.
var ErrConnectionLost = errors.New("the connection to the database was lost")

// Lost marks d, an engine's classified error, as a lost connection: the
// result unwraps both to d (errors.As finds the *contracts.DBError) and to
// ErrConnectionLost.
func Lost(d *contracts.DBError) error {
	return &lostError{db: d}
}

type lostError struct{ db *contracts.DBError }

func (e *lostError) Error() string   { return e.db.Error() }
func (e *lostError) Unwrap() []error { return []error{e.db, ErrConnectionLost} }

// MayBeLost reports whether err, an operation's failure that is neither a
// refusal nor a too-large result, may mean the connection's database no
// longer answers: it is marked ErrConnectionLost, classified unavailable or
// other (a failure no SQLSTATE, result code or error type ties to the
// statement), or not classified at all. The executor asks the database once
// more before it decides.
func MayBeLost(err error) bool {
	if errors.Is(err, ErrConnectionLost) {
		return true
	}
	var d *contracts.DBError
	if !errors.As(err, &d) {
		return true // unclassified: nothing ties it to the statement
	}
	return d.Class == contracts.DBUnavailable || d.Class == contracts.DBOther
}
