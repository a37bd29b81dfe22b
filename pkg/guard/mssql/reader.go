// Package mssql is the guard's reader of SQL Server's dialect, T-SQL.
//
// No maintained T-SQL parser written in Go exists to lean on, so this
// package carries its own: a lexer that follows SQL Server's rules for what
// can hide a statement or a keyword ('…' and N'…' strings, […] and "…"
// identifiers with doubled closers, -- and nested /* */ comments, GO, @x,
// @@x, #t), and a recursive-descent reader of the SELECT subset an analyst
// writes: WITH (recursive) CTEs, SELECT [DISTINCT] [TOP], joins and APPLY,
// derived tables, subqueries, set operations, GROUP BY with ROLLUP/CUBE/
// GROUPING SETS, window functions, WITHIN GROUP, PIVOT/UNPIVOT, CASE,
// CAST/CONVERT. Whatever it cannot follow it refuses (unparsable or
// unsupported); it never guesses.
//
// It is a pre-filter. The executor also asks SQL Server itself, through
// SET SHOWPLAN_XML ON, what the statement is and which objects it reads, and
// holds those to the same rules; and the database's own means (a
// least-privilege login, a snapshot transaction that is always rolled back)
// hold the line.
package mssql

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// MaxLen is the longest statement the reader reads.
const MaxLen = 256 << 10

// maxDepth bounds the nesting of expressions, subqueries and joins.
const maxDepth = 200

// Reader reads T-SQL. Its zero value is ready to use and safe for
// concurrent use.
type Reader struct{}

var _ guard.Reader = Reader{}

// Read parses sql as one T-SQL SELECT and reduces it to the guard's neutral
// shape, or refuses it.
func (Reader) Read(sql string) (*guard.Statement, *contracts.Refusal) {
	if ref := guard.CheckShape(sql, guard.LexTSQL); ref != nil { // before any native parser: docs/guard.md
		return nil, ref
	}
	if strings.IndexByte(sql, 0) >= 0 {
		return nil, guard.Refuse(contracts.RefuseUnparsable, "the statement contains a NUL byte", "remove the NUL byte")
	}
	if !utf8.ValidString(sql) {
		return nil, guard.Refuse(contracts.RefuseUnparsable, "the statement is not valid UTF-8", "send the statement as UTF-8 text")
	}
	if len(sql) > MaxLen {
		return nil, guard.Refuse(contracts.RefuseUnsupported,
			fmt.Sprintf("the statement is %d bytes; the guard reads at most %d", len(sql), MaxLen),
			"write a shorter query")
	}
	toks, lerr := lex(sql)
	if lerr != nil {
		fix := lerr.fix
		if fix == "" {
			fix = "close every string, [identifier] and /* comment; write the query in T-SQL"
		}
		return nil, guard.Refuse(contracts.RefuseUnparsable,
			fmt.Sprintf("T-SQL cannot read the statement: %s", lerr), fix)
	}
	if ref := prefilter(toks); ref != nil {
		return nil, ref
	}
	end := len(toks) - 1 // the EOF
	for i, t := range toks {
		if t.isPunct(";") {
			end = i
			break
		}
	}
	body := append(toks[:end:end], token{kind: tEOF, pos: toks[end].pos, end: toks[end].pos})
	p := &parser{toks: body}
	if ref := p.run(); ref != nil {
		return nil, ref
	}
	return &guard.Statement{
		Text:      sql[:body[len(body)-2].end],
		Canonical: canonical(body),
		Scopes:    p.scopes,
		Names:     guard.NamesFold,
	}, nil
}

// prefilter refuses, before parsing, what needs no parse to refuse: nothing
// to run, more than one statement, and a statement that is not a query.
func prefilter(toks []token) *contracts.Refusal {
	first := -1
	for i, t := range toks {
		if t.kind != tEOF && !t.isPunct(";") {
			first = i
			break
		}
	}
	if first < 0 {
		return guard.Refuse(contracts.RefuseEmpty, "nothing to run: the statement is blank, or only comments and ';'", "send one SELECT")
	}
	for i, t := range toks {
		if t.is("GO") && t.lineStart && goSeparator(toks, i) {
			return guard.Refuse(contracts.RefuseNotOneStatement,
				"GO on a line of its own separates batches: the text holds more than one statement",
				"send one SELECT at a time, without GO")
		}
	}
	if first > 0 {
		return guard.Refuse(contracts.RefuseUnparsable, "the statement begins with ';'", "send one SELECT, without a leading ';'")
	}
	semi := false
	for _, t := range toks {
		switch {
		case t.isPunct(";"):
			semi = true
		case semi && t.kind != tEOF:
			return guard.Refuse(contracts.RefuseNotOneStatement,
				fmt.Sprintf("more than one statement: %q follows a ';'", t.text),
				"send one SELECT at a time")
		}
	}
	t := toks[0]
	if t.is("SELECT") || t.is("WITH") || t.isPunct("(") {
		return nil
	}
	what := "this statement"
	if t.kind == tWord {
		what = "a " + t.upper() + " statement"
	}
	return guard.Refuse(contracts.RefuseNotASelect,
		fmt.Sprintf("only a SELECT can run here; %s is not one", what),
		"write one SELECT (or WITH … SELECT); to see a table's columns use inspect_schema")
}

// goSeparator reports whether the GO at i stands alone on its line (with an
// optional count), as sqlcmd and SSMS read it.
func goSeparator(toks []token, i int) bool {
	next := toks[i+1]
	if next.kind == tEOF || next.lineStart {
		return true
	}
	return next.kind == tNumber && (toks[i+2].kind == tEOF || toks[i+2].lineStart)
}

// canonical writes the tokens in one normal form that keeps literals:
// comments and layout dropped, keywords in upper case, delimited identifiers
// bracketed, one space between tokens except around . and inside ( ).
func canonical(toks []token) string {
	var b strings.Builder
	prev := token{kind: tEOF}
	for i, t := range toks {
		if t.kind == tEOF {
			break
		}
		if i > 0 && !t.isPunct(".") && !t.isPunct(",") && !t.isPunct(")") && !prev.isPunct(".") && !prev.isPunct("(") &&
			!(t.isPunct("(") && (prev.kind == tWord && !reserved[prev.upper()] || prev.kind == tQuoted)) {
			b.WriteByte(' ')
		}
		switch t.kind {
		case tWord:
			if u := t.upper(); reserved[u] || functions[u] {
				b.WriteString(u)
			} else {
				b.WriteString(t.text)
			}
		case tQuoted:
			if regular(t.text) {
				b.WriteString(t.text)
			} else {
				b.WriteString("[" + strings.ReplaceAll(t.text, "]", "]]") + "]")
			}
		default:
			b.WriteString(t.text)
		}
		prev = t
	}
	return b.String()
}

// regular reports whether a delimited identifier could be written without
// its delimiters: a regular identifier that is no reserved keyword.
func regular(s string) bool {
	return s != "" && isIdentStart(s, 0) && identEnd(s, 0) == len(s) && !reserved[strings.ToUpper(s)] &&
		!strings.ContainsAny(s, "@#$")
}
