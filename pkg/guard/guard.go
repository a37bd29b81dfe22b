// Package guard reads a statement before it runs and refuses, with a code, a
// reason and a fix, anything that is not one read-only SELECT over readable
// tables with its large tables bounded.
//
// The guard is the clear, cheap refusal; the line itself is held by each
// database's own read-only mechanisms. Each engine has a reader in its own
// sub-package (postgres, sqlite, duckdb, mssql) that parses the statement with
// that engine's parser and reduces it to a Statement: the neutral shape the
// shared rules of this package — readable tables, large-table bounds — are
// applied to. What a reader cannot parse it refuses; it never guesses.
package guard

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"

	"github.com/sondehq/sonde/contracts"
)

// Policy is what a connection allows.
type Policy struct {
	// Readable lists table patterns ("public.*", "sales.orders", "*") in the
	// engine's own identifier syntax, matched the way the engine resolves
	// names (see NameRule and docs/guard.md): schema and name separately, a
	// '*' within one part only, an unqualified pattern in DefaultSchema.
	// Empty means every table that is not a System one.
	Readable []string
	// LargeTables maps schema.table, written as a Readable pattern is, to the
	// column a statement must bound from below in the query that reads the
	// table.
	LargeTables map[string]string
	// DefaultSchema is where an unqualified name lives ("public", "main", "dbo").
	DefaultSchema string
	// Catalog is the connection's own database; a name in another catalog is
	// refused. Empty accepts only unqualified catalogs.
	Catalog string
}

// Reader reads one statement in an engine's dialect.
type Reader interface {
	// Read parses sql and returns its neutral shape, or the refusal for what
	// the engine's parser says it is.
	Read(sql string) (*Statement, *contracts.Refusal)
}

// NameLister is implemented by a reader whose Read compiles a statement
// against the database's schema (SQLite), so that a statement naming a table
// or column that does not exist is refused with no Statement. Names reads
// the statement's shape without the schema: its scopes' tables and column
// uses, with nothing checked or refused beyond what it cannot read. Its
// Statement is for naming what a statement refers to — never for deciding
// whether it may run.
type NameLister interface {
	Names(sql string) (*Statement, *contracts.Refusal)
}

// Statement is a parsed statement reduced to what the shared rules need.
type Statement struct {
	// Text is what runs: the statement as sent, without trailing terminators.
	Text string
	// Canonical is a canonical form that keeps literals: the repair ledger's key.
	Canonical string
	// Scopes are every SELECT in the statement: the top level, each set
	// operation branch, each CTE body and each subquery.
	Scopes []Scope
	// Names is how the engine compares the names in Scopes; the reader sets
	// it. The zero value, NamesFold, is case-insensitive.
	Names NameRule
	// ColumnsRead is set by a reader that reports the columns each scope
	// names (Scope.Columns); without it an empty Columns says nothing.
	ColumnsRead bool
}

// Scope is one SELECT: the tables its own FROM and JOINs name, and the lower
// bounds its own WHERE and join conditions establish.
type Scope struct {
	Tables []Table
	// Bounds are the columns bounded from below by a top-level AND conjunct
	// of this SELECT's WHERE or of a join's ON, against a constant or a
	// function of constants.
	Bounds []Bound
	// Columns are the column names this SELECT writes in its select list,
	// WHERE, join conditions (ON, USING), GROUP BY and HAVING, when the
	// reader reports them (Statement.ColumnsRead). A reader leaves out what
	// may not be a column of an input: '*', ORDER BY (which may name output
	// columns), an unqualified name equal to one of the select list's
	// aliases, and whatever it cannot place. See ColumnRefs.
	Columns []ColumnUse
	// Derived are the names the SELECT's FROM items that are not tables are
	// referred to by — a subquery, a table function, a CTE reference, an
	// aliased join — one entry each, "" for one without a name. A column of
	// such an item belongs to no table.
	Derived []string
	// Nested is set when the SELECT sits inside another SELECT (a subquery,
	// a set-operation branch or CTE of one): an unqualified column there may
	// belong to an enclosing SELECT.
	Nested bool
}

// ColumnUse is a column name as a scope writes it.
type ColumnUse struct {
	// Qualifier is the alias or table name written before the column; ""
	// when the column is unqualified.
	Qualifier string
	Name      string
}

// Table is a table a scope reads. CTE references are not tables: a reader
// resolves them with correct scoping and leaves them out.
type Table struct {
	Catalog, Schema, Name string
	// Alias is the name the scope refers to it by; empty when none was given.
	Alias string
	// System is set when the name resolves to one of the engine's own
	// catalogs, views or table functions (pg_catalog, sqlite_schema, sys…):
	// such a table is readable only when a pattern names it (see Policy).
	System bool
}

// Bound is a column bounded from below.
type Bound struct {
	// Qualifier is the alias or table name before the column, if any.
	Qualifier string
	Column    string
	// Limits, when not nil, are the refs (the alias, or the table name when
	// there is none, as written) of the tables whose rows this bound limits:
	// a bound in the ON of a LEFT join limits only its right side, of a RIGHT
	// join only its left side, of a FULL join none (an empty, non-nil slice).
	// Nil — a WHERE, or the ON of an inner or cross join — limits every table
	// of the scope.
	Limits []string
	// Vacuous, when not empty, says why the bound's value limits nothing
	// (NULL, '-infinity', a date at or before BoundFloor, a value the reader
	// cannot reduce: see BoundValue.Vacuous). Such a bound does not count.
	Vacuous string
}

// Fingerprint names the statement by its canonical form: two statements that
// differ only in layout, comments or keyword case share it, while a changed
// literal changes it. It keys the repair ledger.
func (st *Statement) Fingerprint() string {
	sum := sha256.Sum256([]byte(st.Canonical))
	return "fp_" + hex.EncodeToString(sum[:12])
}

// QualifiedName is schema.table in lower case, the default schema filled in.
func (t Table) QualifiedName(defaultSchema string) string {
	s := t.Schema
	if s == "" {
		s = defaultSchema
	}
	return strings.ToLower(s + "." + t.Name)
}

// Refuse builds a refusal.
func Refuse(code contracts.Code, reason, fix string) *contracts.Refusal {
	return &contracts.Refusal{Code: code, Message: reason, Fix: fix}
}

// Check reads sql with r and applies the shared rules of p.
func Check(r Reader, sql string, p Policy) (*Statement, *contracts.Refusal) {
	st, ref := r.Read(sql)
	if ref != nil {
		return nil, ref
	}
	if ref := Apply(st, p); ref != nil {
		return nil, ref
	}
	return st, nil
}

// Apply applies the readable-table and large-table rules to a parsed statement.
func Apply(st *Statement, p Policy) *contracts.Refusal {
	m := newMatcher(st.Names, p)
	for _, sc := range st.Scopes {
		for _, t := range sc.Tables {
			if ref := m.readable(t); ref != nil {
				return ref
			}
		}
		if ref := m.checkBounds(sc); ref != nil {
			return ref
		}
	}
	return nil
}

// Tables lists every distinct table a statement reads, sorted.
func (st *Statement) Tables(defaultSchema string) []string {
	seen := map[string]bool{}
	for _, sc := range st.Scopes {
		for _, t := range sc.Tables {
			seen[t.QualifiedName(defaultSchema)] = true
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
