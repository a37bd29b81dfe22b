package mssql

import (
	"context"
	"errors"
	"fmt"
	"time"

	mssqldb "github.com/microsoft/go-mssqldb"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// errorClasses maps SQL Server error numbers to classes.
var errorClasses = map[int32]contracts.DBErrorClass{
	// Syntax: incorrect syntax near …, near keyword …, unclosed quotation
	// mark, … missing or extra parts.
	102: contracts.DBSyntax, 105: contracts.DBSyntax, 156: contracts.DBSyntax, 170: contracts.DBSyntax,
	319: contracts.DBSyntax, 1018: contracts.DBSyntax, 4145: contracts.DBSyntax,
	// Missing object: invalid object name, invalid column name, the
	// multi-part identifier could not be bound, not a built-in function,
	// no such function or procedure, ambiguous column.
	207: contracts.DBMissingObject, 208: contracts.DBMissingObject, 209: contracts.DBMissingObject,
	195: contracts.DBMissingObject, 2812: contracts.DBMissingObject, 4104: contracts.DBMissingObject,
	4121: contracts.DBMissingObject,
	// Permission: SELECT/EXECUTE denied on an object, on a column, on the
	// database, SHOWPLAN denied, a server permission missing, no access to
	// the database, login failed.
	229: contracts.DBPermission, 230: contracts.DBPermission, 262: contracts.DBPermission,
	297: contracts.DBPermission, 300: contracts.DBPermission, 916: contracts.DBPermission,
	3906: contracts.DBPermission, 18456: contracts.DBPermission,
	// Resource: deadlock victim, lock timeout, lock or memory exhausted,
	// query memory not granted, tempdb full.
	1205: contracts.DBResource, 1222: contracts.DBResource, 1204: contracts.DBResource,
	701: contracts.DBResource, 8645: contracts.DBResource, 8651: contracts.DBResource,
	1105: contracts.DBResource, 9002: contracts.DBResource, 40501: contracts.DBResource,
	// Unavailable: database offline, in recovery, not accessible.
	942: contracts.DBUnavailable, 922: contracts.DBUnavailable, 4060: contracts.DBUnavailable,
	40613: contracts.DBUnavailable, 976: contracts.DBUnavailable,
}

// snapshotOff is the error of a snapshot transaction on a database that
// does not allow snapshot isolation.
const snapshotOff = 3952

// classify turns an error from running a statement into a classified
// database error: by the context for timeouts and cancellation, by SQL
// Server's error number for the rest, never by the message's text.
func classify(ctx context.Context, err error, timeout time.Duration) *contracts.DBError {
	var de *contracts.DBError
	if errors.As(err, &de) {
		return de
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &contracts.DBError{Class: contracts.DBTimeout,
			Message: fmt.Sprintf("the statement ran past its %s timeout and was cancelled", timeout)}
	case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		return &contracts.DBError{Class: contracts.DBCancelled, Message: "the statement was cancelled before it finished"}
	case errors.Is(err, rowset.ErrInvalidUTF8):
		return &contracts.DBError{Class: contracts.DBOther, Message: err.Error() +
			"; read the column as bytes instead, e.g. CAST(col AS varbinary(max))"}
	}
	var se mssqldb.Error
	if !errors.As(err, &se) {
		var pe *mssqldb.Error
		if !errors.As(err, &pe) {
			return &contracts.DBError{Class: contracts.DBOther, Message: err.Error()}
		}
		se = *pe
	}
	msg := fmt.Sprintf("SQL Server error %d: %s", se.Number, se.Message)
	if se.Number == snapshotOff {
		return &contracts.DBError{Class: contracts.DBOther,
			Message: msg + " (the database must allow snapshot isolation: ALTER DATABASE … SET ALLOW_SNAPSHOT_ISOLATION ON)"}
	}
	if c, ok := errorClasses[se.Number]; ok {
		return &contracts.DBError{Class: c, Message: msg}
	}
	return &contracts.DBError{Class: contracts.DBOther, Message: msg}
}
