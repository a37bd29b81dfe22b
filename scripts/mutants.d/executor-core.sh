# Mutants of the executor's core rules (issue 17): a database lost after
# start is a connection state, told in neutral words. Sourced by
# scripts/mutants.sh; see its header for the m NAME PACKAGE RUN-REGEX NEEDS
# FILE OLD NEW form.

xc=./services/executor/
xe=services/executor/executor.go

# A read that finds its database gone re-marks the connection unavailable.
m lost-not-remarked-unavailable "$xc" 'TestLostSQLiteFileIsAConnectionState' - \
	"$xe" 'srv.engine, srv.reason = nil, reason' 'srv.reason = reason'
# ... and opens it again in the background until it answers.
m lost-not-reopened "$xc" 'TestLostDuckDBFileIsAConnectionState' - \
	"$xe" $'\t\ts.keepOpening(srv)\n\t}()' $'\t\ts.retries.Done()\n\t}()'
# The reply is the typed connection_unavailable refusal, not a database
# error charged to the statement, on every engine.
m lost-reply-not-typed "$xc" 'TestLostSQLiteFileIsAConnectionState|TestLostDuckDBFileIsAConnectionState' - \
	"$xe" 'case engine.MayBeLost(err) && s.confirmLost(ctx, eng):' 'case false && s.confirmLost(ctx, eng):'
m lost-reply-not-typed-pg "$xc" 'TestLostPostgresIsAConnectionState' pg \
	"$xe" 'case engine.MayBeLost(err) && s.confirmLost(ctx, eng):' 'case false && s.confirmLost(ctx, eng):'
# Its reason names no path, host, port or role.
m lost-reason-driver-text "$xc" 'TestLostDuckDBFileIsAConnectionState' - \
	"$xe" 'ref = s.lose(req.ConnectionID, eng, err)' 'ref = s.lose(req.ConnectionID, eng, err); ref.Message += ": " + driverText(err)'
# Nor does the reason of a failed attempt to open it again. (On PostgreSQL
# the engine's own open error names nothing either since issue 17, so the
# SQLite file's path is what pins this.)
m reopen-reason-driver-text "$xc" 'TestLostSQLiteFileIsAConnectionState' - \
	"$xe" 'reason := unavailableReason(err)' 'reason := err.Error()'
# A statement's own failure is not taken for a lost database: the database
# is asked once more.
m lost-without-probe "$xc" 'TestStatementFailureLeavesTheConnectionAvailable' - \
	"$xe" $'case perr == nil, errors.As(perr, &ref):\n\t\treturn false' $'case perr == nil, errors.As(perr, &ref):\n\t\treturn true'
# Engine text of class unavailable, or of no class, stays in the log.
m unavailable-text-shown "$xc" 'TestUntiedEngineTextStaysInTheLog' - \
	"$xe" 'case dbErr.Class == contracts.DBUnavailable || errors.Is(err, engine.ErrConnectionLost):' 'case false:'
m unclassified-text-shown "$xc" 'TestUntiedEngineTextStaysInTheLog' - \
	"$xe" $'dbErr = &contracts.DBError{Class: contracts.DBOther,\n\t\t\tMessage: "the engine failed the operation with an error it did not classify; the executor\'s log has its text"}' 'dbErr = &contracts.DBError{Class: contracts.DBOther, Message: err.Error()}'
# large_tables that do not match the catalog are a warning on the descriptor.
m large-tables-not-warned "$xc" 'TestLargeTablesMismatchIsAConnectionWarning' - \
	services/executor/warnings.go 'large, err := largeTableWarnings(ctx, eng)' 'large, err := []string(nil), error(nil)'
# A connection id passes the one id rule (contracts.CheckID) where the
# connections file is read, and again where the executor is configured.
m connection-id-rule-at-load ./services/executor/connections/ 'TestParseErrors' - \
	services/executor/connections/connections.go 'if err := contracts.CheckID(contracts.IDConnection, c.ID); err != nil && c.ID != "" {' 'if err := error(nil); err != nil && c.ID != "" {'
m connection-id-rule-at-new "$xc" 'TestNewRefusesAnInvalidConnectionID' - \
	"$xe" 'if err := contracts.CheckID(contracts.IDConnection, c.ID); err != nil {' 'if err := error(nil); err != nil {'
# What refuses every read (PostgreSQL: a user-defined implicit cast) is a
# warning on the descriptor.
m read-blockers-not-warned "$xc" 'TestImplicitUserCastIsAConnectionWarning' pg \
	services/executor/warnings.go 'if b, ok := eng.(readBlocker); ok {' 'if b, ok := eng.(readBlocker); ok && false {'
