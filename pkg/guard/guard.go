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
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/sondehq/sonde/contracts"
)

// Policy is what a connection allows.
type Policy struct {
	// Readable lists table patterns ("public.*", "sales.orders", "*"),
	// matched case-insensitively against schema.table. Empty means every table.
	Readable []string
	// LargeTables maps schema.table to the column a statement must bound from
	// below in the query that reads the table.
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

// Statement is a parsed statement reduced to what the shared rules need.
type Statement struct {
	// Text is what runs: the statement as sent, without trailing terminators.
	Text string
	// Canonical is a canonical form that keeps literals: the repair ledger's key.
	Canonical string
	// Scopes are every SELECT in the statement: the top level, each set
	// operation branch, each CTE body and each subquery.
	Scopes []Scope
}

// Scope is one SELECT: the tables its own FROM and JOINs name, and the lower
// bounds its own WHERE and join conditions establish.
type Scope struct {
	Tables []Table
	// Bounds are the columns bounded from below by a top-level AND conjunct
	// of this SELECT's WHERE or of a join's ON, against a constant or a
	// function of constants.
	Bounds []Bound
}

// Table is a table a scope reads. CTE references are not tables: a reader
// resolves them with correct scoping and leaves them out.
type Table struct {
	Catalog, Schema, Name string
	// Alias is the name the scope refers to it by; empty when none was given.
	Alias string
}

// Bound is a column bounded from below.
type Bound struct {
	// Qualifier is the alias or table name before the column, if any.
	Qualifier string
	Column    string
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
func Refuse(code, reason, fix string) *contracts.Refusal {
	return &contracts.Refusal{Code: code, Reason: reason, Fix: fix}
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
	for _, sc := range st.Scopes {
		for _, t := range sc.Tables {
			if t.Catalog != "" && !strings.EqualFold(t.Catalog, p.Catalog) {
				return Refuse(contracts.RefuseTableNotReadable,
					fmt.Sprintf("%s is in another database (%s)", t.Catalog+"."+t.QualifiedName(p.DefaultSchema), t.Catalog),
					"read only this connection's own database")
			}
			name := t.QualifiedName(p.DefaultSchema)
			if !readable(name, p.Readable) {
				return Refuse(contracts.RefuseTableNotReadable,
					fmt.Sprintf("%s is not readable on this connection", name),
					"read only tables matching: "+strings.Join(p.Readable, ", "))
			}
		}
		if ref := checkBounds(sc, p); ref != nil {
			return ref
		}
	}
	return nil
}

func readable(name string, patterns []string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, pat := range patterns {
		pat = strings.ToLower(pat)
		if pat == "*" || pat == name {
			return true
		}
		if ok, err := path.Match(pat, name); err == nil && ok {
			return true
		}
	}
	return false
}

// checkBounds holds every large table of a scope to a lower bound on its
// column in that same scope; with several tables the bound must be qualified.
func checkBounds(sc Scope, p Policy) *contracts.Refusal {
	if len(p.LargeTables) == 0 {
		return nil
	}
	large := map[string]string{}
	for k, v := range p.LargeTables {
		t := Table{Name: k}
		if i := strings.LastIndexByte(k, '.'); i >= 0 {
			t = Table{Schema: k[:i], Name: k[i+1:]}
		}
		large[t.QualifiedName(p.DefaultSchema)] = strings.ToLower(v)
	}
	several := len(sc.Tables) > 1
	for _, t := range sc.Tables {
		col, ok := large[t.QualifiedName(p.DefaultSchema)]
		if !ok {
			continue
		}
		ref := t.Alias
		if ref == "" {
			ref = t.Name
		}
		bounded := false
		for _, b := range sc.Bounds {
			if !strings.EqualFold(b.Column, col) {
				continue
			}
			if b.Qualifier == "" && !several || strings.EqualFold(b.Qualifier, ref) {
				bounded = true
				break
			}
		}
		if !bounded {
			example := col
			if several {
				example = ref + "." + col
			}
			return Refuse(contracts.RefuseLargeTableUnbounded,
				fmt.Sprintf("%s is a large table: bound %s from below in the WHERE of the query that reads it", t.QualifiedName(p.DefaultSchema), col),
				fmt.Sprintf("add WHERE %s >= <a value> (a top-level AND, on the column itself, against a constant%s)", example,
					map[bool]string{true: "; qualify it, several tables are read there", false: ""}[several]))
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
