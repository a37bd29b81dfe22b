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
