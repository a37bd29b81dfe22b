package sqlite

import (
	"fmt"
	"strings"
	"sync"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	"modernc.org/sqlite"
)

// Read is one READ SQLite's authorizer was asked about.
type Read struct {
	// Database is "main", "temp" or empty: SQLite reports a read without a
	// column (count(*) FROM t) with the database as written, none for an
	// unqualified table — or a CTE, which it reports the same way.
	Database string
	Table    string
	// Column is empty when the table is read without a column.
	Column string
	// Via names the innermost view or CTE the read happens in; empty at the
	// top of the statement.
	Via string
}

// Record is what the authorizer was asked while SQLite compiled (and ran)
// statements on a connection. It is safe for concurrent use.
type Record struct {
	mu        sync.Mutex
	reads     []Read
	functions []string
	cteReads  map[string]bool // CTE names read without a column
	denied    *contracts.Refusal
	action    string
	bare      string // the table of the first denial, a read with no column and no database
}

// Reads returns the table reads allowed so far (table functions left out).
func (r *Record) Reads() []Read {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Read(nil), r.reads...)
}

// Functions returns the functions called so far.
func (r *Record) Functions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.functions...)
}

// CTEReads returns the CTE names a StatementAuthorizer allowed a read of
// without a column, folded as SQLite folds them, sorted.
func (r *Record) CTEReads() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return sortedKeys(r.cteReads)
}

// deniedBareRead returns the table of the first denial when it was a read
// with no column and no database — count(*) of a table, or of a CTE — and
// "" otherwise.
func (r *Record) deniedBareRead() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bare
}

// Denied returns the first operation the authorizer denied, as the refusal
// the guard gives for it, and the operation in words ("DELETE on t"); nil
// and "" when nothing was denied.
func (r *Record) Denied() (*contracts.Refusal, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.denied, r.action
}

func (r *Record) deny(ref *contracts.Refusal, action string) sqlite.AuthorizerReturnCode {
	if r != nil {
		r.mu.Lock()
		if r.denied == nil {
			r.denied, r.action = ref, action
		}
		r.mu.Unlock()
	}
	return sqlite.AuthorizerDeny
}

// Authorizer returns the authorizer a connection compiles and runs
// statements under. It allows SELECT, recursion, reads of the tables p's
// readable patterns match, the allowlisted functions, json_each/json_tree,
// and the read-only metadata pragmas on readable tables (as statements and
// in their table-valued form, whose PRAGMA SQLite compiles while it runs the
// statement); it denies everything else — writes, DDL, ATTACH, other
// pragmas, other functions and table functions. rec, when not nil, records
// the reads and functions allowed and the first denial.
func Authorizer(p guard.Policy, rec *Record) sqlite.AuthorizerFn {
	return StatementAuthorizer(p, rec, nil)
}

// StatementAuthorizer is Authorizer for one statement, given the names in
// ctes that name no table, view or virtual table of the database
// (Reading.CTEs, found by SQLite's own name lookup). A FROM item none of
// whose columns is used (count(*) FROM c) is reported as a READ of its name
// with no column and no database, a CTE's as well as an unqualified
// table's; such a read of one of ctes can only be a CTE's, and is allowed.
// Every other read — a column of anything, a name with its database
// (main.c), any other name — is held to p's patterns as Authorizer holds it.
func StatementAuthorizer(p guard.Policy, rec *Record, ctes []string) sqlite.AuthorizerFn {
	var cte map[string]bool
	if len(ctes) > 0 {
		cte = make(map[string]bool, len(ctes))
		for _, n := range ctes {
			cte[foldASCII(n)] = true
		}
	}
	return func(action sqlite.AuthorizerActionCode, arg1, arg2, db, via string) sqlite.AuthorizerReturnCode {
		switch action {
		case sqlite.AuthSelect, sqlite.AuthRecursive:
			return sqlite.AuthorizerOK
		case sqlite.AuthTransaction:
			// database/sql's own BEGIN/COMMIT/ROLLBACK; a statement of the
			// caller's that begins a transaction never reaches SQLite.
			return sqlite.AuthorizerOK
		case sqlite.AuthRead:
			if arg2 == "" && db == "" && cte[foldASCII(arg1)] {
				// A CTE never has a database name; with one (main.c) the
				// name is a table's.
				if rec != nil {
					rec.mu.Lock()
					if rec.cteReads == nil {
						rec.cteReads = map[string]bool{}
					}
					rec.cteReads[foldASCII(arg1)] = true
					rec.mu.Unlock()
				}
				return sqlite.AuthorizerOK
			}
			return readAction(p, rec, Read{Database: db, Table: arg1, Column: arg2, Via: via})
		case sqlite.AuthFunction:
			if !allowedFunction(arg2) {
				return rec.deny(guard.Refuse(contracts.RefuseFunctionDenied,
					fmt.Sprintf("the function %s is denied: %s", arg2, deniedFamily(arg2)),
					"compute it with the core, aggregate, window, date, math and JSON functions, or leave it out"),
					"function "+arg2)
			}
			if rec != nil {
				rec.mu.Lock()
				rec.functions = append(rec.functions, foldASCII(arg2))
				rec.mu.Unlock()
			}
			return sqlite.AuthorizerOK
		case sqlite.AuthPragma:
			return pragmaAction(p, rec, arg1, arg2, db)
		}
		what := describeAction(action, arg1, arg2)
		return rec.deny(guard.Refuse(contracts.RefuseNotReadOnly,
			fmt.Sprintf("the statement would %s; only reads may run", what),
			"write one SELECT that reads what you need; nothing may change the database"), what)
	}
}

func readAction(p guard.Policy, rec *Record, rd Read) sqlite.AuthorizerReturnCode {
	if isFunc, allowed := tableFunction(rd.Table); isFunc {
		if !allowed {
			return rec.deny(guard.Refuse(contracts.RefuseTableFunction,
				fmt.Sprintf("the table function %s is not allowed here", rd.Table),
				"read from tables; the table functions allowed are json_each, json_tree and the pragma_ forms of "+
					strings.Join(sortedKeys(metadataPragmas), ", ")),
				"table function "+rd.Table)
		}
		return sqlite.AuthorizerOK
	}
	if ref := readable(p, rd.Database, rd.Table); ref != nil {
		if rec != nil && rd.Column == "" && rd.Database == "" {
			rec.mu.Lock()
			if rec.denied == nil {
				rec.bare = rd.Table
			}
			rec.mu.Unlock()
		}
		return rec.deny(ref, "read of "+rd.Table)
	}
	if rec != nil {
		rec.mu.Lock()
		rec.reads = append(rec.reads, rd)
		rec.mu.Unlock()
	}
	return sqlite.AuthorizerOK
}

func pragmaAction(p guard.Policy, rec *Record, name, arg, db string) sqlite.AuthorizerReturnCode {
	n := strings.ToLower(name)
	if !metadataPragmas[n] {
		return rec.deny(guard.Refuse(contracts.RefuseNotASelect,
			fmt.Sprintf("PRAGMA %s is not one of the read-only metadata pragmas", name),
			"read the schema with PRAGMA "+strings.Join(sortedKeys(metadataPragmas), ", ")+", or SELECT … FROM sqlite_master"),
			"PRAGMA "+name)
	}
	// The pragma names a table (an index for index_info and index_xinfo,
	// held to the same patterns); table_list with no argument lists the
	// catalog.
	table := arg
	if table == "" {
		table = "sqlite_master"
	}
	if ref := readable(p, db, table); ref != nil {
		return rec.deny(ref, "PRAGMA "+name+"("+arg+")")
	}
	return sqlite.AuthorizerOK
}

// readable holds one table to p's readable patterns by the shared rule and
// SQLite's own name rules (ASCII case folding, no schema means main, the
// sqlite_ tables are system catalogs a pattern must name), with the shared
// rule's own words.
func readable(p guard.Policy, db, table string) *contracts.Refusal {
	t := guard.Table{Schema: db, Name: table, System: systemTable(table)}
	if len(p.Readable) == 0 && !t.System {
		return nil
	}
	schema := p.DefaultSchema
	if schema == "" {
		schema = "main"
	}
	st := &guard.Statement{Names: guard.NamesASCIIFold, Scopes: []guard.Scope{{Tables: []guard.Table{t}}}}
	return guard.Apply(st, guard.Policy{Readable: p.Readable, DefaultSchema: schema})
}

// NormalizePolicy returns p with the name SQLite reports for its schema
// table added beside each pattern that names it by a newer name: SQLite
// reports a read of sqlite_schema as one of sqlite_master (and
// sqlite_temp_schema as sqlite_temp_master), so a pattern naming
// sqlite_schema admits the reads it means.
func NormalizePolicy(p guard.Policy) guard.Policy {
	var extra []string
	for _, pat := range p.Readable {
		f := foldASCII(pat)
		alias := strings.ReplaceAll(strings.ReplaceAll(f, "sqlite_temp_schema", "sqlite_temp_master"), "sqlite_schema", "sqlite_master")
		if alias != f {
			extra = append(extra, alias)
		}
	}
	if len(extra) > 0 {
		p.Readable = append(append([]string(nil), p.Readable...), extra...)
	}
	return p
}

// CatalogPolicy is the policy a connection reads its own catalog under (a
// schema read, the proof at open that the file is a database): the schema
// table only.
func CatalogPolicy() guard.Policy {
	return guard.Policy{Readable: []string{"main.sqlite_master"}, DefaultSchema: "main"}
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
	sqlite.AuthUpdate: "UPDATE", sqlite.AuthAttach: "ATTACH", sqlite.AuthDetach: "DETACH",
	sqlite.AuthAlterTable: "ALTER TABLE", sqlite.AuthReindex: "REINDEX", sqlite.AuthAnalyze: "ANALYZE",
	sqlite.AuthCreateVTable: "CREATE VIRTUAL TABLE", sqlite.AuthDropVTable: "DROP VIRTUAL TABLE",
	sqlite.AuthSavepoint: "SAVEPOINT",
}

func describeAction(action sqlite.AuthorizerActionCode, arg1, arg2 string) string {
	name, ok := actionNames[action]
	if !ok {
		return fmt.Sprintf("run operation %d", action)
	}
	switch action {
	case sqlite.AuthAttach, sqlite.AuthDetach, sqlite.AuthSavepoint:
		return name
	case sqlite.AuthUpdate:
		return fmt.Sprintf("UPDATE %s.%s", arg1, arg2)
	}
	if arg1 != "" {
		return name + " " + arg1
	}
	return name
}
