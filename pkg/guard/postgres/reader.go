// Package postgres is the guard's PostgreSQL reader: it parses a statement
// with PostgreSQL's own parser (pg_query_go, libpg_query) and reduces it to
// guard.Statement, refusing on the way whatever is not one read-only SELECT.
//
// What it refuses, beyond the statement's kind:
//   - anything that writes, locks or runs a command anywhere in the tree — a
//     data-modifying CTE, SELECT … INTO, FOR UPDATE/SHARE — as not_read_only;
//   - any function off the allowlist (functions.go), a schema-qualified
//     function outside pg_catalog, a cast to an object-identifier type
//     ('t'::regclass), and set_config (query_settings);
//   - a table function in FROM other than generate_series and unnest.
//
// Attribute notation. PostgreSQL reads t.f, when t has no column f, as the
// call f(t), and c.f or (expr).f, when the value has no field f, as f(c) or
// f(expr); the parse tree holds a column reference or a field selection,
// not a call. So every name after the first of a column reference, and
// every field selected from an expression, goes through the allowlist as a
// call would: a name of a denied family, or of any built-in function that
// takes one argument and is off the allowlist (catalog.go), is refused even
// where it is a real column (the fix says how to read such a column).
// Whatever the guard cannot know without the server — a user-defined
// function or operator that overload resolution would pick, a function of a
// newer server — the executor looks up in the catalog inside the read-only
// transaction, from what UsesOf reports.
//
// Operators: only the symbols of PostgreSQL's built-in operators, unqualified
// or in pg_catalog.
//
// Tables are resolved from every RangeVar with CTE scoping done as
// PostgreSQL does it: a name with no schema that matches a CTE visible there
// is the CTE (a WITH RECURSIVE CTE sees every sibling, a plain one only the
// earlier ones), anything else is a table. Names are exact: the parser has
// folded unquoted names to lower case and kept quoted ones as written
// (Statement.Names is guard.NamesExact). An unqualified name of one of
// pg_catalog's relations (or any pg_ name) is pg_catalog's, since pg_catalog
// comes first on every search path; any other unqualified name is public's,
// the sessions' search path. Tables in pg_catalog, information_schema and
// the other pg_ schemas are marked System.
package postgres

import (
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// Reader reads PostgreSQL statements. It is safe for concurrent use. Its
// zero value reads for a server of unknown version, which refuses the
// spellings that are grammar only on newer servers (ServerVersion).
type Reader struct {
	// ServerVersion is the server's server_version_num (150018 for
	// 15.18); 0 when unknown. The guard parses with PostgreSQL 17's grammar:
	// a spelling that is grammar from a later version than the server's
	// (JSON_VALUE, JSON_ARRAY, …) is a plain call of a function of that name
	// there, perhaps a user-defined one, so it is refused unless the server
	// is known to be new enough (docs/guard.md).
	ServerVersion int
}

var _ guard.Reader = Reader{}

// DefaultSchema is where PostgreSQL finds an unqualified table on a default
// search path.
const DefaultSchema = "public"

// Read parses sql and returns its neutral shape, or the refusal.
func (r Reader) Read(sql string) (*guard.Statement, *contracts.Refusal) {
	st, _, ref := r.ReadUses(sql)
	return st, ref
}

// ReadUses is Read that also returns what the statement calls, from the
// same parse: the executor checks those names against the live catalog
// inside the read's transaction.
func (r Reader) ReadUses(sql string) (*guard.Statement, Uses, *contracts.Refusal) {
	if ref := guard.CheckShape(sql, guard.LexPostgres); ref != nil { // before any native parser: docs/guard.md
		return nil, Uses{}, ref
	}
	if strings.IndexByte(sql, 0) >= 0 {
		return nil, Uses{}, guard.Refuse(contracts.RefuseUnparsable, "the query holds a NUL byte",
			"send the query as plain text")
	}
	tree, err := pg_query.Parse(sql)
	if err != nil {
		return nil, Uses{}, guard.Refuse(contracts.RefuseUnparsable,
			"PostgreSQL cannot read the query: "+err.Error(), unparsableFix(sql))
	}
	w, raw, ref := walkTree(tree, r.ServerVersion)
	if ref != nil {
		return nil, Uses{}, ref
	}
	canonical, err := pg_query.Deparse(&pg_query.ParseResult{Version: tree.Version, Stmts: []*pg_query.RawStmt{{Stmt: raw.Stmt}}})
	if err != nil {
		return nil, Uses{}, guard.Refuse(contracts.RefuseUnsupported, "the guard cannot write the statement back: "+err.Error(),
			"write the query more plainly")
	}
	return &guard.Statement{Text: text(sql, raw), Canonical: canonical, Scopes: w.scopes, Names: guard.NamesExact, ColumnsRead: true}, w.uses, nil
}

// walkTree reads a parse tree that must hold one SELECT.
func walkTree(tree *pg_query.ParseResult, version int) (*walker, *pg_query.RawStmt, *contracts.Refusal) {
	switch n := len(tree.Stmts); {
	case n == 0:
		return nil, nil, guard.Refuse(contracts.RefuseEmpty, "nothing to run: the query is blank, or only comments and semicolons",
			"send one SELECT")
	case n > 1:
		return nil, nil, guard.Refuse(contracts.RefuseNotOneStatement,
			fmt.Sprintf("the query holds %d statements", n), "send one SELECT at a time")
	}
	raw := tree.Stmts[0]
	sel := raw.GetStmt().GetSelectStmt()
	if sel == nil {
		return nil, nil, guard.Refuse(contracts.RefuseNotASelect,
			fmt.Sprintf("the statement is %s, not a SELECT", kind(raw.GetStmt())),
			"send a SELECT; inspect_schema shows the tables and their columns")
	}
	w := &walker{version: version}
	w.selectStmt(sel)
	if w.refusal != nil {
		return nil, nil, w.refusal
	}
	if w.slowCheck(); w.refusal != nil {
		return nil, nil, w.refusal
	}
	w.resolve()
	return w, raw, nil
}

// unparsableFix is the fix of an unparsable statement. PostgreSQL numbers
// its placeholders ($1, $2, …); a ? where a value belongs is the commonest
// mistake from other dialects, so the fix names it when the query holds one
// outside strings, quoted names and comments.
func unparsableFix(sql string) string {
	if sc, err := pg_query.Scan(sql); err == nil {
		for _, tok := range sc.Tokens {
			if s, e := int(tok.Start), int(tok.End); s >= 0 && e <= len(sql) && s < e && sql[s:e] == "?" {
				return "PostgreSQL's placeholders are $1, $2, …, not ?: write $1 for the first parameter, $2 for the second"
			}
		}
	}
	return "write it in PostgreSQL's dialect (this connection's engine is PostgreSQL)"
}

// text is the statement as sent, up to its end: no trailing semicolons,
// comments after them or white space.
func text(sql string, raw *pg_query.RawStmt) string {
	end := len(sql)
	if raw.StmtLen > 0 {
		if e := int(raw.StmtLocation) + int(raw.StmtLen); e <= len(sql) {
			end = e
		}
	}
	return strings.TrimRight(sql[:end], " \t\r\n\f\v;")
}

// kind names a statement node for a refusal: "an INSERT", "a CREATE TABLE".
func kind(n *pg_query.Node) string {
	if n == nil || n.GetNode() == nil {
		return "not a statement"
	}
	name := fmt.Sprintf("%T", n.GetNode()) // *pg_query.Node_InsertStmt
	name = strings.TrimPrefix(name[strings.LastIndexByte(name, '.')+1:], "Node_")
	if k, ok := kinds[name]; ok {
		return k
	}
	return "a " + strings.TrimSuffix(name, "Stmt") + " statement"
}

var kinds = map[string]string{
	"InsertStmt": "an INSERT", "UpdateStmt": "an UPDATE", "DeleteStmt": "a DELETE", "MergeStmt": "a MERGE",
	"CreateStmt": "a CREATE TABLE", "DropStmt": "a DROP", "AlterTableStmt": "an ALTER TABLE",
	"VariableSetStmt": "a SET", "VariableShowStmt": "a SHOW", "CopyStmt": "a COPY", "ExplainStmt": "an EXPLAIN",
	"TransactionStmt": "a transaction command", "CreateTableAsStmt": "a CREATE TABLE AS", "DoStmt": "a DO block",
	"CallStmt": "a CALL", "TruncateStmt": "a TRUNCATE", "GrantStmt": "a GRANT", "LockStmt": "a LOCK",
	"ListenStmt": "a LISTEN", "NotifyStmt": "a NOTIFY", "PrepareStmt": "a PREPARE", "ExecuteStmt": "an EXECUTE",
	"DeclareCursorStmt": "a DECLARE CURSOR", "VacuumStmt": "a VACUUM", "DiscardStmt": "a DISCARD",
}
