package sqlite

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// classify turns an error from running a statement into a classified
// database error. It goes by SQLite's result code wherever the code tells
// the classes apart. SQLITE_ERROR does not: a syntax error and a missing
// table share it and no extended code separates them, so for that code alone
// the message decides.
func classify(err error, timeout time.Duration, denied string) *contracts.DBError {
	if de := engine.Interrupted(err, timeout); de != nil {
		return de
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return &contracts.DBError{Class: contracts.DBOther, Message: err.Error()}
	}
	msg := se.Error()
	code := se.Code() & 0xff
	if denied != "" && (code == sqlite3.SQLITE_AUTH || code == sqlite3.SQLITE_ERROR) {
		// The authorizer refused part of this statement: SQLite reports a
		// denied function as SQLITE_ERROR, anything else as SQLITE_AUTH.
		return &contracts.DBError{Class: contracts.DBPermission,
			Message: msg + fmt.Sprintf(" (the executor's authorizer denied %s: only reads are allowed)", denied)}
	}
	switch code {
	case sqlite3.SQLITE_INTERRUPT:
		// The driver interrupts a statement only when its context ends; one
		// whose context ended is reported above, so this is a timeout whose
		// context error was not passed on.
		return engine.TimedOut(timeout)
	case sqlite3.SQLITE_AUTH, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM:
		return &contracts.DBError{Class: contracts.DBPermission, Message: msg}
	case sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_FULL, sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return &contracts.DBError{Class: contracts.DBResource, Message: msg}
	case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
		return &contracts.DBError{Class: contracts.DBUnavailable, Message: msg}
	case sqlite3.SQLITE_ERROR:
		lower := strings.ToLower(msg)
		for _, s := range []string{"no such table", "no such column", "no such function", "no such collation", "no such module", "no such index"} {
			if strings.Contains(lower, s) {
				return &contracts.DBError{Class: contracts.DBMissingObject, Message: msg}
			}
		}
		for _, s := range []string{"syntax error", "incomplete input", "unrecognized token"} {
			if strings.Contains(lower, s) {
				return &contracts.DBError{Class: contracts.DBSyntax, Message: msg}
			}
		}
	}
	return &contracts.DBError{Class: contracts.DBOther, Message: msg}
}
