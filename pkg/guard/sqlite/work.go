package sqlite

import (
	"fmt"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// SQLite hears an interrupt only between the steps of a statement's program,
// and a pattern match is one step however long it runs: hex(zeroblob(400000))
// LIKE '%' || hex(zeroblob(20000)) || '1%' ran 420 s past a 1 s deadline,
// because LIKE and GLOB do work that grows with the product of the value's
// and the pattern's lengths, and instr and replace with the product of the
// value's and the needle's. So the guard refuses these (issue 17, item 4)
// when an operand is a value the statement builds:
//
//   - LIKE, GLOB, REGEXP and MATCH, written as operators or called as
//     functions (like, glob), and instr and replace: no operand may call a
//     function that builds a value (hex, zeroblob, printf, replace,
//     group_concat, json_group_array, …; only the functions in keepsSize,
//     whose value is no longer than their arguments, may appear) nor hold a
//     subquery;
//   - instr and replace in a statement that reads from a CTE, a subquery or
//     VALUES, where a column can be a value the statement built: their
//     needle must be a literal or a parameter.
//
// What stays is bounded by the engine: a LIKE or GLOB pattern is at most
// SQLITE_LIMIT_LIKE_PATTERN_LENGTH bytes and a value at most
// SQLITE_LIMIT_LENGTH (services/executor/internal/sqlite).

// keepsSize are the functions whose value is never much longer than their
// arguments: they may appear in a pattern operator's operands.
var keepsSize = set("lower", "upper", "trim", "ltrim", "rtrim", "substr", "substring", "coalesce",
	"ifnull", "nullif", "iif", "if", "cast", "likely", "unlikely", "likelihood", "typeof", "unicode",
	"length", "octet_length", "abs", "round", "date", "time", "datetime", "julianday", "unixepoch",
	"json_extract", "->", "->>", "collate")

// patternOperators are the infix operators whose work grows with the
// product of their operands' lengths.
var patternOperators = set("LIKE", "GLOB", "REGEXP", "MATCH")

// patternCalls are the functions whose work grows with the product of their
// arguments' lengths; needles are the ones whose second argument is a needle.
var (
	patternCalls = set("like", "glob", "regexp", "match", "instr", "replace")
	needles      = set("instr", "replace")
)

// stopWords end an operand of a pattern operator: keywords of lower
// precedence or of another clause.
var stopWords = set("AND", "OR", "NOT", "WHEN", "THEN", "ELSE", "SELECT", "FROM", "WHERE",
	"ON", "USING", "GROUP", "HAVING", "ORDER", "LIMIT", "OFFSET", "AS", "IS", "IN", "BETWEEN", "LIKE",
	"GLOB", "REGEXP", "MATCH", "ESCAPE", "UNION", "EXCEPT", "INTERSECT", "WINDOW", "FILTER", "OVER",
	"JOIN", "BY", "ASC", "DESC", "EXISTS", "VALUES", "WITH", "NULLS", "ISNULL", "NOTNULL")

// stopOps end an operand: comparisons of lower precedence and separators.
var stopOps = set("=", "==", "!=", "<>", ",", ";")

// checkWork refuses the pattern work above in the tokens of one statement.
func checkWork(stmt []token) *contracts.Refusal {
	derived := readsDerived(stmt)
	for i, t := range stmt {
		switch {
		case t.kind == kWord && patternOperators[strings.ToUpper(t.text)]:
			op := strings.ToUpper(t.text)
			j := i - 1
			if j >= 0 && stmt[j].is("NOT") {
				j--
			}
			if what := builtIn(stmt[operandStart(stmt, j) : j+1]); what != "" {
				return refuseWork(op, "the value it matches", what)
			}
			if what := builtIn(stmt[i+1 : operandEnd(stmt, i+1)]); what != "" {
				return refuseWork(op, "its pattern", what)
			}
		case (t.kind == kWord || t.kind == kIdent) && patternCalls[strings.ToLower(t.name())] && i+1 < len(stmt) && stmt[i+1].op("("):
			name := strings.ToLower(t.name())
			close := matching(stmt, i+1)
			args := splitList(stmt[i+2 : close])
			for _, a := range args {
				if what := builtIn(a); what != "" {
					return refuseWork(name+"()", "an argument", what)
				}
			}
			if needles[name] && derived && len(args) > 1 && !plainValue(args[1]) {
				return guard.Refuse(contracts.RefuseTooComplex,
					fmt.Sprintf("%s() searches for a needle that is not a literal or a parameter in a statement that reads from a CTE, a subquery or VALUES, where a column can be a value the statement built: its work grows with the product of the two lengths, and SQLite cannot stop one call at the deadline", name),
					"search for a string literal or a bound parameter")
			}
		}
	}
	return nil
}

func refuseWork(what, operand, built string) *contracts.Refusal {
	return guard.Refuse(contracts.RefuseTooComplex,
		fmt.Sprintf("%s over a value the statement builds (%s calls %s): its work grows with the product of the lengths, and SQLite cannot stop one match at the deadline", what, operand, built),
		"match a table's column, or a short literal or parameter, directly; build no long values around LIKE, GLOB, instr or replace")
}

// builtIn names what in x builds a value: a function outside keepsSize or a
// subquery; empty when nothing does.
func builtIn(x []token) string {
	for i, t := range x {
		switch {
		case t.is("SELECT"), t.is("VALUES"):
			return "a subquery"
		case (t.kind == kWord || t.kind == kIdent) && i+1 < len(x) && x[i+1].op("(") && !keepsSize[strings.ToLower(t.name())]:
			return strings.ToLower(t.name()) + "()"
		}
	}
	return ""
}

// plainValue reports whether x is one literal or parameter.
func plainValue(x []token) bool {
	return len(x) == 1 && (x[0].kind == kString || x[0].kind == kBlob || x[0].kind == kNumber || x[0].kind == kVariable)
}

// readsDerived reports whether the statement reads from a CTE, a subquery
// or VALUES: a SELECT, VALUES or WITH after its first token.
func readsDerived(stmt []token) bool {
	for i, t := range stmt {
		if t.is("WITH") || (i > 0 && (t.is("SELECT") || t.is("VALUES"))) {
			return true
		}
	}
	return false
}

// stops reports whether t ends an operand.
func stops(t token) bool {
	return t.kind == kEOF || t.kind == kSemi || (t.kind == kWord && stopWords[strings.ToUpper(t.text)]) ||
		(t.kind == kOp && stopOps[t.text])
}

// operandStart is the index where the operand ending at j begins: back over
// balanced parentheses and CASE … END to a token that ends operands, or to
// an unmatched "(" or CASE.
func operandStart(toks []token, j int) int {
	for ; j >= 0; j-- {
		t := toks[j]
		switch {
		case t.is("END"):
			depth := 0
			for ; j >= 0; j-- {
				if toks[j].is("END") {
					depth++
				} else if toks[j].is("CASE") {
					if depth--; depth == 0 {
						break
					}
				}
			}
			if j < 0 {
				return 0
			}
		case t.is("CASE"):
			return j + 1
		case t.op(")"):
			depth := 0
			for ; j >= 0; j-- {
				if toks[j].op(")") {
					depth++
				} else if toks[j].op("(") {
					if depth--; depth == 0 {
						break
					}
				}
			}
			if j < 0 {
				return 0
			}
		case t.op("("), stops(t):
			return j + 1
		}
	}
	return 0
}

// operandEnd is the index just past the operand beginning at i: forward
// over balanced parentheses and CASE … END to a token that ends operands,
// or to an unmatched ")" or END.
func operandEnd(toks []token, i int) int {
	for ; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.op("("):
			i = matching(toks, i)
		case t.is("CASE"):
			depth := 0
			for ; i < len(toks); i++ {
				if toks[i].is("CASE") {
					depth++
				} else if toks[i].is("END") {
					if depth--; depth == 0 {
						break
					}
				}
			}
			if i == len(toks) {
				return i
			}
		case t.is("END"), t.op(")"), stops(t):
			return i
		}
	}
	return len(toks)
}

// matching is the index of the ")" that closes the "(" at i, or the last
// index when none does.
func matching(toks []token, i int) int {
	depth := 0
	for j := i; j < len(toks); j++ {
		if toks[j].op("(") {
			depth++
		} else if toks[j].op(")") {
			if depth--; depth == 0 {
				return j
			}
		}
	}
	return len(toks) - 1
}
