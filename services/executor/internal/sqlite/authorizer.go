package sqlite

import (
	"fmt"
	"strings"
	"sync"

	"modernc.org/sqlite"
)

// denial records what the authorizer last refused on a connection, so the
// error can say what was denied instead of SQLite's bare "not authorized".
type denial struct {
	mu   sync.Mutex
	what string
}

func (d *denial) set(s string) {
	d.mu.Lock()
	d.what = s
	d.mu.Unlock()
}

func (d *denial) get() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.what
}

// policy is the authorizer every connection runs under: SQLite asks it about
// each operation while it compiles a statement, before anything executes. It
// allows reading (SELECT, READ, RECURSIVE, FUNCTION) and the transaction
// action the driver itself uses, and denies everything else: writes, DDL,
// PRAGMA (pragma_* table functions included), ATTACH, ANALYZE, SAVEPOINT….
// load_extension is denied even as a function. rec, when not nil, learns what
// was denied.
func policy(rec *denial) sqlite.AuthorizerFn {
	return func(action sqlite.AuthorizerActionCode, arg1, arg2, _, _ string) sqlite.AuthorizerReturnCode {
		switch action {
		case sqlite.AuthSelect, sqlite.AuthRead, sqlite.AuthRecursive, sqlite.AuthTransaction:
			return sqlite.AuthorizerOK
		case sqlite.AuthFunction:
			if !strings.EqualFold(arg2, "load_extension") {
				return sqlite.AuthorizerOK
			}
		}
		if rec != nil {
			rec.set(describeAction(action, arg1, arg2))
		}
		return sqlite.AuthorizerDeny
	}
}

var actionNames = map[sqlite.AuthorizerActionCode]string{
	sqlite.AuthCreateIndex: "CREATE INDEX", sqlite.AuthCreateTable: "CREATE TABLE",
	sqlite.AuthCreateTempIndex: "CREATE TEMP INDEX", sqlite.AuthCreateTempTable: "CREATE TEMP TABLE",
	sqlite.AuthCreateTempTrigger: "CREATE TEMP TRIGGER", sqlite.AuthCreateTempView: "CREATE TEMP VIEW",
	sqlite.AuthCreateTrigger: "CREATE TRIGGER", sqlite.AuthCreateView: "CREATE VIEW",
	sqlite.AuthDelete: "DELETE", sqlite.AuthDropIndex: "DROP INDEX", sqlite.AuthDropTable: "DROP TABLE",
	sqlite.AuthDropTempIndex: "DROP TEMP INDEX", sqlite.AuthDropTempTable: "DROP TEMP TABLE",
	sqlite.AuthDropTempTrigger: "DROP TEMP TRIGGER", sqlite.AuthDropTempView: "DROP TEMP VIEW",
	sqlite.AuthDropTrigger: "DROP TRIGGER", sqlite.AuthDropView: "DROP VIEW", sqlite.AuthInsert: "INSERT",
	sqlite.AuthPragma: "PRAGMA", sqlite.AuthUpdate: "UPDATE", sqlite.AuthAttach: "ATTACH",
	sqlite.AuthDetach: "DETACH", sqlite.AuthAlterTable: "ALTER TABLE", sqlite.AuthReindex: "REINDEX",
	sqlite.AuthAnalyze: "ANALYZE", sqlite.AuthCreateVTable: "CREATE VIRTUAL TABLE",
	sqlite.AuthDropVTable: "DROP VIRTUAL TABLE", sqlite.AuthFunction: "function", sqlite.AuthSavepoint: "SAVEPOINT",
}

func describeAction(action sqlite.AuthorizerActionCode, arg1, arg2 string) string {
	name, ok := actionNames[action]
	if !ok {
		name = fmt.Sprintf("operation %d", action)
	}
	switch action {
	case sqlite.AuthFunction:
		return "function " + arg2
	case sqlite.AuthPragma:
		if arg2 != "" {
			return fmt.Sprintf("PRAGMA %s(%s)", arg1, arg2)
		}
		return "PRAGMA " + arg1
	case sqlite.AuthAttach:
		return "ATTACH"
	}
	if arg1 != "" {
		return name + " on " + arg1
	}
	return name
}
