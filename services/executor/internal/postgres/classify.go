package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// classify turns an error from pgx into a *contracts.DBError by SQLSTATE,
// the server's text in Message. ctx is the caller's context: a statement
// stopped because the caller gave up is cancelled, one stopped by its own
// timeout (the server's statement_timeout or the client's deadline) is a
// timeout.
func classify(ctx context.Context, err error) *contracts.DBError {
	var dbErr *contracts.DBError
	if errors.As(err, &dbErr) {
		return dbErr
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		msg := pgErr.Message
		if pgErr.Detail != "" {
			msg += " (" + pgErr.Detail + ")"
		}
		msg = "SQLSTATE " + pgErr.Code + ": " + msg
		return &contracts.DBError{Class: classOf(ctx, pgErr.Code), Message: msg}
	}
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return &contracts.DBError{Class: contracts.DBCancelled, Message: "the statement was cancelled"}
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) || pgconn.Timeout(err):
		return &contracts.DBError{Class: contracts.DBTimeout, Message: "the statement ran past its time limit; narrow the query"}
	case errors.Is(err, context.Canceled):
		return &contracts.DBError{Class: contracts.DBCancelled, Message: "the statement was cancelled"}
	}
	if unreachable(err) {
		return connectionLost()
	}
	return &contracts.DBError{Class: contracts.DBOther, Message: err.Error()}
}

// unreachable reports, by the error's type, whether err is a failure to
// reach the server or a connection that broke under a statement: pgconn's
// connect error, a network error, or the stream ending. Their text names
// the role, database, host and port, and never reaches a reply.
func unreachable(err error) bool {
	var netErr net.Error
	var connectErr *pgconn.ConnectError
	return errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// connectionLost is the error of a database that cannot be reached or that
// dropped the connection, in words that name none of it.
func connectionLost() *contracts.DBError {
	return &contracts.DBError{Class: contracts.DBUnavailable,
		Message: "the connection to the database was lost: the server could not be reached or closed the connection"}
}

// lost marks d as a lost connection (engine.ErrConnectionLost): a state of
// the connection, not a failure of the statement.
func lost(d *contracts.DBError) error { return engine.Lost(d) }

// lostCode reports whether a SQLSTATE means the server ended the session
// (connection exceptions, admin or crash shutdown, cannot connect now).
func lostCode(code string) bool {
	return strings.HasPrefix(code, "08") || code == "57P01" || code == "57P02" || code == "57P03"
}

// stateError is a classified server error that keeps the SQLSTATE it was
// classified from, so the engine can branch on the code (pg_stat_statements
// not preloaded is 55000) without reading the message. It unwraps to the
// *contracts.DBError the executor replies with; the code never leaves the
// engine.
type stateError struct {
	db   *contracts.DBError
	code string
}

func (e *stateError) Error() string { return e.db.Error() }
func (e *stateError) Unwrap() error { return e.db }

// classified is classify for the errors an engine returns: a server error
// comes back as a *stateError carrying its SQLSTATE, anything else as the
// *contracts.DBError classify makes.
//
// A connection that was lost — the server unreachable, the stream broken,
// the session ended by the server (08xxx, 57P01–57P03) — is marked
// engine.ErrConnectionLost, with a reason that names no role, database,
// host or port; an error already marked keeps its mark.
func classified(ctx context.Context, err error) error {
	if errors.Is(err, engine.ErrConnectionLost) {
		return err
	}
	d := classify(ctx, err)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if lostCode(pgErr.Code) {
			return lost(connectionLost())
		}
		return &stateError{db: d, code: pgErr.Code}
	}
	var se *stateError
	if errors.As(err, &se) {
		return se
	}
	if d.Class == contracts.DBUnavailable {
		return lost(d)
	}
	return d
}

// classifiedOn is classified for a failure on pc: when the connection is
// closed and neither the caller nor the deadline ended it, whatever the
// error says, the connection was lost.
func classifiedOn(ctx, stmtCtx context.Context, pc *pgconn.PgConn, err error) error {
	var pgErr *pgconn.PgError
	if pc.IsClosed() && stmtCtx.Err() == nil && !errors.As(err, &pgErr) {
		return lost(connectionLost())
	}
	return classified(ctx, err)
}

// sqlState is the SQLSTATE of a server error err holds, "" when it holds
// none.
func sqlState(err error) string {
	var se *stateError
	if errors.As(err, &se) {
		return se.code
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// classOf maps a SQLSTATE to a class.
func classOf(ctx context.Context, code string) contracts.DBErrorClass {
	switch {
	case code == "42601":
		return contracts.DBSyntax
	case code == "42P01" || code == "42703" || code == "42883" || code == "3F000" || code == "42704":
		return contracts.DBMissingObject
	case code == "42501" || code == "25006" || strings.HasPrefix(code, "28"):
		// insufficient privilege, read_only_sql_transaction, authorization
		return contracts.DBPermission
	case code == "57014":
		// query_canceled: by statement_timeout, or by the client when the
		// caller gave up.
		if errors.Is(ctx.Err(), context.Canceled) {
			return contracts.DBCancelled
		}
		return contracts.DBTimeout
	case code == "55P03" || code == "25P03":
		return contracts.DBTimeout // lock_not_available, idle in transaction timeout
	case strings.HasPrefix(code, "53") || strings.HasPrefix(code, "54"):
		return contracts.DBResource
	case strings.HasPrefix(code, "08") || code == "57P01" || code == "57P02" || code == "57P03":
		return contracts.DBUnavailable
	case strings.HasPrefix(code, "42"):
		return contracts.DBSyntax
	}
	return contracts.DBOther
}
