package sqlite

import (
	"strings"

	"github.com/sondehq/sonde/pkg/guard"
)

// The scope reader also notes the column names each SELECT writes, for
// Reader.Names: a statement that does not compile (it names a table or a
// column the database lacks) still yields what it names. It reads tokens,
// not a tree, so it is strict about what it takes for a column: a name where
// an operand begins — after an operator, an opening parenthesis, a comma or
// a keyword that takes an operand — that is not a keyword, not a call and not
// a double-quoted word, which SQLite may read as a string. A name after
// another operand is an alias; after AS or COLLATE a name, type or collation.

// note records the token at p.i as a column use of the SELECT being read
// when it is one (see above); depth is its depth of parentheses within the
// expression.
func (p *parser) note(depth int) {
	if p.cur == nil || p.i == 0 {
		return
	}
	t := p.peek()
	if !isColumnName(t) {
		return
	}
	prev := p.toks[p.i-1]
	if prev.op(".") {
		return // the second name of q.col, read with the first
	}
	if !startsOperand(prev) {
		if p.clause == "select" && depth == 0 && (prev.is("AS") || endsOperand(prev)) {
			p.cur.aliases[foldASCII(t.name())] = true
		}
		return
	}
	next := p.at(1)
	switch {
	case next.op("("):
		return // a call
	case next.op("."):
		col := p.at(2)
		if col.kind != kWord && col.kind != kIdent || p.at(3).op(".") || p.at(3).op("(") {
			return // q.*, s.t.col
		}
		p.use(t.name(), col.name())
	case t.kind == kIdent && t.text[0] == '"':
		// SQLite reads a double-quoted word that names no column as a string.
	default:
		p.use("", t.name())
	}
}

func (p *parser) use(qualifier, name string) {
	switch p.clause {
	case "select", "from", "where", "group", "having":
		p.cur.uses = append(p.cur.uses, colUse{guard.ColumnUse{Qualifier: qualifier, Name: name}, p.clause})
	}
}

// columns reduces a SELECT's column references to its column uses, once
// each. An unqualified name is left out where it may be no input column: an
// output alias (SQLite reads them in WHERE and GROUP BY too), the name of a
// FROM item, and anywhere in HAVING; rowid and its other names are every
// table's, listed or not.
func (cs *colScope) columns() []guard.ColumnUse {
	var out []guard.ColumnUse
	seen := map[guard.ColumnUse]bool{}
	for _, u := range cs.uses {
		n := foldASCII(u.Name)
		if rowidNames[n] {
			continue
		}
		if u.Qualifier == "" && (u.clause == "having" || cs.aliases[n] || cs.refs[n]) {
			continue
		}
		if !seen[u.ColumnUse] {
			seen[u.ColumnUse] = true
			out = append(out, u.ColumnUse)
		}
	}
	return out
}

// rowidNames are the names SQLite gives a table's rowid.
var rowidNames = set("rowid", "oid", "_rowid_")

// isColumnName reports whether t may name a column: a quoted identifier, or
// a word that is no SQLite keyword.
func isColumnName(t token) bool {
	switch t.kind {
	case kIdent:
		return len(t.text) > 0
	case kWord:
		return !keywords[strings.ToUpper(t.text)]
	}
	return false
}

// startsOperand reports whether an operand begins after t.
func startsOperand(t token) bool {
	switch t.kind {
	case kOp:
		return t.text != ")" && t.text != "."
	case kWord:
		return operandWords[strings.ToUpper(t.text)]
	}
	return false
}

// endsOperand reports whether an operand may end with t, so that a name
// after it is an alias.
func endsOperand(t token) bool {
	switch t.kind {
	case kIdent, kString, kNumber, kBlob, kVariable:
		return true
	case kOp:
		return t.text == ")"
	case kWord:
		kw := strings.ToUpper(t.text)
		return !keywords[kw] || valueWords[kw] || kw == "END" || kw == "ISNULL" || kw == "NOTNULL"
	}
	return false
}

// operandWords are the keywords an operand may follow.
var operandWords = set("SELECT", "DISTINCT", "ALL", "WHERE", "ON", "AND", "OR", "NOT", "BY", "HAVING",
	"WHEN", "THEN", "ELSE", "CASE", "IN", "IS", "LIKE", "GLOB", "MATCH", "REGEXP", "BETWEEN", "ESCAPE",
	"EXISTS", "FROM")

// keywords are SQLite's keywords (https://sqlite.org/lang_keywords.html),
// with TRUE and FALSE, which it reads as values where no column has the name.
var keywords = set("ABORT", "ACTION", "ADD", "AFTER", "ALL", "ALTER", "ALWAYS", "ANALYZE", "AND", "AS",
	"ASC", "ATTACH", "AUTOINCREMENT", "BEFORE", "BEGIN", "BETWEEN", "BY", "CASCADE", "CASE", "CAST", "CHECK",
	"COLLATE", "COLUMN", "COMMIT", "CONFLICT", "CONSTRAINT", "CREATE", "CROSS", "CURRENT", "CURRENT_DATE",
	"CURRENT_TIME", "CURRENT_TIMESTAMP", "DATABASE", "DEFAULT", "DEFERRABLE", "DEFERRED", "DELETE", "DESC",
	"DETACH", "DISTINCT", "DO", "DROP", "EACH", "ELSE", "END", "ESCAPE", "EXCEPT", "EXCLUDE", "EXCLUSIVE",
	"EXISTS", "EXPLAIN", "FAIL", "FILTER", "FIRST", "FOLLOWING", "FOR", "FOREIGN", "FROM", "FULL", "GENERATED",
	"GLOB", "GROUP", "GROUPS", "HAVING", "IF", "IGNORE", "IMMEDIATE", "IN", "INDEX", "INDEXED", "INITIALLY",
	"INNER", "INSERT", "INSTEAD", "INTERSECT", "INTO", "IS", "ISNULL", "JOIN", "KEY", "LAST", "LEFT", "LIKE",
	"LIMIT", "MATCH", "MATERIALIZED", "NATURAL", "NO", "NOT", "NOTHING", "NOTNULL", "NULL", "NULLS", "OF",
	"OFFSET", "ON", "OR", "ORDER", "OTHERS", "OUTER", "OVER", "PARTITION", "PLAN", "PRAGMA", "PRECEDING",
	"PRIMARY", "QUERY", "RAISE", "RANGE", "RECURSIVE", "REFERENCES", "REGEXP", "REINDEX", "RELEASE", "RENAME",
	"REPLACE", "RESTRICT", "RETURNING", "RIGHT", "ROLLBACK", "ROW", "ROWS", "SAVEPOINT", "SELECT", "SET",
	"TABLE", "TEMP", "TEMPORARY", "THEN", "TIES", "TO", "TRANSACTION", "TRIGGER", "UNBOUNDED", "UNION",
	"UNIQUE", "UPDATE", "USING", "VACUUM", "VALUES", "VIEW", "VIRTUAL", "WHEN", "WHERE", "WINDOW", "WITH",
	"WITHOUT", "TRUE", "FALSE")

// addReadColumns gives each scope's tables the columns SQLite's authorizer
// reported reading from them: each column once, as a use qualified by the
// ref of the first scope's table it belongs to. SQLite compiled the
// statement, so these columns exist and are already tied to their tables.
func addReadColumns(scopes []guard.Scope, reads []Read) {
	key := func(schema, name string) string {
		if schema == "" || strings.EqualFold(schema, "main") {
			schema = "main"
		}
		return foldASCII(schema + "." + name)
	}
	seen := map[string]bool{}
	for _, rd := range reads {
		if rd.Column == "" || rowidNames[foldASCII(rd.Column)] {
			continue
		}
		k := key(rd.Database, rd.Table) + "." + foldASCII(rd.Column)
		if seen[k] {
			continue
		}
		seen[k] = true
	scopes:
		for i := range scopes {
			for _, t := range scopes[i].Tables {
				if key(t.Schema, t.Name) == key(rd.Database, rd.Table) {
					scopes[i].Columns = append(scopes[i].Columns, guard.ColumnUse{Qualifier: t.Ref(), Name: rd.Column})
					break scopes
				}
			}
		}
	}
}
