package duckdb

import (
	"errors"
	"strings"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// classify turns an error from running a statement into a classified
// database error. It goes by the context first (the driver interrupts a
// statement whose context ends and joins the context's error to DuckDB's),
// then by the type the driver reads from DuckDB's error. Two types mix
// classes, and only there does the message decide: a binder error is a
// missing column or a mistake in the query, and an invalid-input error is a
// write refused by the read-only instance or bad input.
func classify(err error, timeout time.Duration) *contracts.DBError {
	if de := engine.Interrupted(err, timeout); de != nil {
		return de
	}
	var de *duckdb.Error
	if !errors.As(err, &de) {
		return &contracts.DBError{Class: contracts.DBOther, Message: err.Error()}
	}
	msg := de.Msg
	class := contracts.DBOther
	switch de.Type {
	case duckdb.ErrorTypeParser, duckdb.ErrorTypeSyntax:
		class = contracts.DBSyntax
	case duckdb.ErrorTypeCatalog:
		class = contracts.DBMissingObject
	case duckdb.ErrorTypeBinder:
		lower := strings.ToLower(msg)
		if strings.Contains(lower, "not found") || strings.Contains(lower, "does not exist") {
			class = contracts.DBMissingObject
		} else {
			class = contracts.DBSyntax
		}
	case duckdb.ErrorTypePermission:
		class = contracts.DBPermission
	case duckdb.ErrorTypeInvalidInput:
		if strings.Contains(strings.ToLower(msg), "read-only") {
			class = contracts.DBPermission
		}
	case duckdb.ErrorTypeOutOfMemory, duckdb.ErrorTypeObjectSize:
		class = contracts.DBResource
	case duckdb.ErrorTypeInterrupt:
		// Only an ended context interrupts a statement; reported above when
		// the driver passes the context's error on.
		return engine.TimedOut(timeout)
	case duckdb.ErrorTypeIO, duckdb.ErrorTypeConnection, duckdb.ErrorTypeFatal, duckdb.ErrorTypeInternal:
		class = contracts.DBUnavailable
	}
	return &contracts.DBError{Class: class, Message: msg}
}
