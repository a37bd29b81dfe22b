package postgres

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sondehq/sonde/contracts"
)

// A read's deadline ends the work for real. The server's statement_timeout
// fires first; the client's deadline follows a short grace later and sends
// a cancel request; if the server still has not answered after another
// grace, the client closes the socket. Some work ignores both (a built-in
// that never checks for interrupts, a function that catches the cancel):
// then the server process is terminated from another connection, and the
// reply says so. Everything is over within twice the statement's timeout.

// stopKey is the key of a connection's stopHandler in its CustomData.
const stopKey = "sonde.stop"

// stopHandler is pgconn's cancel-request handler with a deadline delay each
// read sets for itself: how long after the cancel request the socket is
// closed.
type stopHandler struct {
	inner *pgconn.CancelRequestContextWatcherHandler
	delay atomic.Int64 // a time.Duration
}

// HandleCancel sends the cancel request and arms the socket's deadline.
func (h *stopHandler) HandleCancel(ctx context.Context) {
	h.inner.DeadlineDelay = time.Duration(h.delay.Load())
	h.inner.HandleCancel(ctx)
}

// HandleUnwatchAfterCancel clears the socket's deadline.
func (h *stopHandler) HandleUnwatchAfterCancel() { h.inner.HandleUnwatchAfterCancel() }

// setStopDelay sets how long after a cancel request pc's socket is closed;
// it returns the function that restores the default.
func setStopDelay(pc *pgconn.PgConn, d time.Duration) (restore func()) {
	h, ok := pc.CustomData()[stopKey].(*stopHandler)
	if !ok {
		return func() {}
	}
	h.delay.Store(int64(d))
	return func() { h.delay.Store(int64(cancelGrace)) }
}

// stopGrace is how long each step after a statement's timeout waits for the
// step before it: the client's deadline after the server's timeout, the
// socket's close after the cancel request. A quarter of the timeout, at
// least 100 ms and at most grace: timeout + 2 × stopGrace plus the
// termination stays within twice the timeout.
func stopGrace(timeout time.Duration) time.Duration {
	return min(max(timeout/4, 100*time.Millisecond), grace)
}

// terminateWait bounds how long the engine waits for a terminated server
// process to be gone.
const terminateWait = 2 * time.Second

// terminate ends the server process pid from another connection of the
// pool (the same role, which may signal its own sessions) and waits until
// pg_stat_activity no longer lists it. It reports whether the process is
// gone.
func (e *Engine) terminate(pid uint32) bool {
	if pid == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), terminateWait)
	defer cancel()
	c, err := e.pool.Acquire(ctx)
	if err != nil {
		return false
	}
	defer c.Release()
	pc := c.Conn().PgConn()
	arg := [][]byte{[]byte(strconv.FormatUint(uint64(pid), 10))}
	if err := pc.ExecParams(ctx, "SELECT pg_catalog.pg_terminate_backend($1::int)", arg, nil, nil, nil).Read().Err; err != nil {
		return false
	}
	for {
		r := pc.ExecParams(ctx, "SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE pid = $1::int", arg, nil, nil, nil).Read()
		if r.Err != nil || len(r.Rows) != 1 {
			return false
		}
		if string(r.Rows[0][0]) == "0" {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// notStopped is the error of a statement that outlived its deadline or its
// caller's cancellation, after its server process was terminated (gone) or
// could not be.
func notStopped(cancelled bool, timeout time.Duration, gone bool) *contracts.DBError {
	what := fmt.Sprintf("the statement ran past its %s timeout and did not stop when cancelled", timeout)
	class := contracts.DBTimeout
	if cancelled {
		what, class = "the statement was cancelled and did not stop", contracts.DBCancelled
	}
	if gone {
		return &contracts.DBError{Class: class, Message: what + ": its server process was terminated; narrow the query"}
	}
	return &contracts.DBError{Class: class, Message: what + ": its connection was closed, but its server process could not be terminated and may still be running"}
}
