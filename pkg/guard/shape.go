package guard

import (
	"fmt"

	"github.com/sondehq/sonde/contracts"
)

// Lexicon is the lexical syntax of an engine's SQL, as far as CheckShape needs
// it: how strings, quoted names and comments begin and end.
type Lexicon int

const (
	// LexPostgres: 'strings' and E'escape strings', $tag$ dollar quotes$tag$,
	// "names", nested /* comments */.
	LexPostgres Lexicon = iota + 1
	// LexSQLite: 'strings', "names", [names], `names`, comments that do not nest.
	LexSQLite
	// LexDuckDB: as LexPostgres (DuckDB's scanner descends from PostgreSQL's:
	// E'', $$ and nested comments were checked against DuckDB itself).
	LexDuckDB
	// LexTSQL: 'strings', "names", [names] with ]] escapes, nested comments.
	LexTSQL
)

// The statement shape limits. Every reader checks them before its native
// parser sees the text: libpg_query and DuckDB's parser recurse in C and
// kill the process on input nested deeply enough (docs/guard.md has the
// measured figures these leave a wide margin below).
const (
	// MaxStatementBytes is the longest statement read.
	MaxStatementBytes = 64 << 10
	// MaxNesting is the deepest nesting of parentheses, brackets, braces,
	// CASE … END and /* nested comments */.
	MaxNesting = 200
	// MaxOperatorChain is the most operators on one path of the expression
	// tree: along the nesting from the outermost level in, the operator
	// characters and operator keywords (AND, NOT, IS, JOIN, UNION, …) of the
	// enclosing list items summed, plus one per level.
	MaxOperatorChain = 1000
	// MaxSubqueryNesting is the deepest nesting of subqueries: a parenthesis
	// that opens with SELECT, WITH, VALUES, TABLE or FROM. DuckDB's planner
	// takes time that doubles with each level of nested scalar subqueries.
	MaxSubqueryNesting = 12
)

// Shape is what CheckShape measures of a statement.
type Shape struct {
	// Bytes is the statement's length.
	Bytes int
	// Nesting is the deepest nesting of ( [ { and CASE, and of comments.
	Nesting int
	// Subqueries is the deepest nesting of subqueries.
	Subqueries int
	// OperatorChain bounds the depth of the parse tree's operator chains: the
	// largest sum, along one path of nesting, of the operators in each
	// enclosing list item (set operations are summed over the whole level),
	// plus one per level.
	OperatorChain int
}

// CheckShape refuses, as too_complex, a statement longer, more deeply nested
// or with longer operator chains than the guard reads. It scans the text with
// the engine's lexical rules, so brackets and operators inside strings,
// quoted names and comments do not count. Every reader calls it first.
func CheckShape(sql string, lex Lexicon) *contracts.Refusal {
	if len(sql) > MaxStatementBytes {
		return Refuse(contracts.RefuseTooComplex,
			fmt.Sprintf("the statement is %d bytes; the guard reads at most %d", len(sql), MaxStatementBytes),
			fmt.Sprintf("write a statement of at most %d bytes (%d KiB): filter with a condition or a join instead of listing values", MaxStatementBytes, MaxStatementBytes>>10))
	}
	sh := MeasureShape(sql, lex)
	switch {
	case sh.Nesting > MaxNesting:
		return Refuse(contracts.RefuseTooComplex,
			fmt.Sprintf("the statement nests parentheses, brackets, CASE or comments %d deep; the guard reads at most %d", sh.Nesting, MaxNesting),
			fmt.Sprintf("nest at most %d levels: move subqueries into WITH clauses, flatten nested CASE into one CASE with several WHEN", MaxNesting))
	case sh.Subqueries > MaxSubqueryNesting:
		return Refuse(contracts.RefuseTooComplex,
			fmt.Sprintf("the statement nests subqueries %d deep; the guard reads at most %d", sh.Subqueries, MaxSubqueryNesting),
			fmt.Sprintf("nest at most %d subqueries: name intermediate results in WITH clauses and join them", MaxSubqueryNesting))
	case sh.OperatorChain > MaxOperatorChain:
		return Refuse(contracts.RefuseTooComplex,
			fmt.Sprintf("the statement chains %d operators in one expression; the guard reads at most %d", sh.OperatorChain, MaxOperatorChain),
			fmt.Sprintf("keep each expression under %d operators: use IN (…) for many alternatives, an aggregate for many terms, split long expressions across columns or CTEs", MaxOperatorChain))
	}
	return nil
}

// opWords are the keywords that join operands the way operator characters
// do: each can nest the parse tree one level deeper.
var opWords = map[string]bool{
	"AND": true, "OR": true, "NOT": true, "IS": true, "IN": true, "LIKE": true, "ILIKE": true,
	"BETWEEN": true, "SIMILAR": true, "GLOB": true, "REGEXP": true, "RLIKE": true, "MATCH": true,
	"ESCAPE": true, "COLLATE": true, "AT": true, "OVERLAPS": true, "ISNULL": true, "NOTNULL": true,
	"OPERATOR": true, "JOIN": true, "APPLY": true, "EXISTS": true, "ANY": true, "ALL": true, "SOME": true,
}

// queryWords open a query: after a parenthesis, a subquery.
var queryWords = map[string]bool{"SELECT": true, "WITH": true, "VALUES": true, "TABLE": true, "FROM": true}

// setWords combine whole SELECTs: their chain runs across the commas of the
// select lists between them.
var setWords = map[string]bool{"UNION": true, "INTERSECT": true, "EXCEPT": true}

// frame is one level of nesting.
type frame struct {
	closer byte // ')', ']', '}' or 'E' for CASE … END
	ops    int  // operators in the current list item
	child  int  // the costliest nested level in the current list item
	item   int  // the costliest list item closed so far
	setOps int
	query  bool // a subquery: the parenthesis opens with SELECT, WITH, …
}

func (f *frame) endItem() {
	f.item = max(f.item, f.ops+f.child)
	f.ops, f.child = 0, 0
}

func (f *frame) cost() int {
	f.endItem()
	return f.item + f.setOps + 1
}

// MeasureShape scans sql with lex's rules and returns its shape.
func MeasureShape(sql string, lex Lexicon) Shape {
	s := sql
	sh := Shape{Bytes: len(s)}
	stack := []frame{{}}
	opened := map[byte]int{} // open levels by closer: a stray closer costs nothing
	queries := 0             // open subqueries
	justOpened := false      // the last token was an opening parenthesis
	open := func(closer byte) {
		stack = append(stack, frame{closer: closer})
		opened[closer]++
		sh.Nesting = max(sh.Nesting, len(stack)-1)
	}
	// closeLevel ends the innermost level closed by closer, and any levels
	// left open inside it (a parse error the parser will report).
	closeLevel := func(closer byte) {
		if opened[closer] == 0 {
			return
		}
		for i := len(stack) - 1; i > 0; i-- {
			if stack[i].closer != closer {
				continue
			}
			for len(stack)-1 >= i {
				top := &stack[len(stack)-1]
				opened[top.closer]--
				if top.query {
					queries--
				}
				c := top.cost()
				stack = stack[:len(stack)-1]
				parent := &stack[len(stack)-1]
				parent.child = max(parent.child, c)
			}
			return
		}
	}
	op := func(n int) { stack[len(stack)-1].ops += n }
	nests := lex == LexPostgres || lex == LexDuckDB || lex == LexTSQL
	dollar := lex == LexPostgres || lex == LexDuckDB

	for i := 0; i < len(s); {
		c := s[i]
		afterOpen := justOpened
		justOpened = false
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			justOpened = afterOpen
			i++
		case c == '-' && i+1 < len(s) && s[i+1] == '-' && !(lex == LexTSQL && i+2 < len(s) && s[i+2] == '('):
			// A line comment ends at \n or \r: SQL Server, PostgreSQL and
			// DuckDB end it at either; ending SQLite's early only counts more.
			for i < len(s) && s[i] != '\n' && s[i] != '\r' {
				i++
			}
			justOpened = afterOpen
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			// Nested comments count as nesting: PostgreSQL's and DuckDB's
			// scanners take time that grows with the square of their depth.
			var depth int
			i, depth = skipBlockComment(s, i, nests)
			sh.Nesting = max(sh.Nesting, len(stack)-1+depth)
			justOpened = afterOpen
		case c == '\'':
			i = skipQuoted(s, i+1, '\'', true)
		case c == '"':
			i = skipQuoted(s, i+1, '"', true)
		case c == '[' && lex == LexTSQL:
			i = skipQuoted(s, i+1, ']', true)
		case c == '[' && lex == LexSQLite:
			i = skipQuoted(s, i+1, ']', false)
		case c == '`' && lex == LexSQLite:
			i = skipQuoted(s, i+1, '`', true)
		case c == '$' && dollar && i+1 < len(s) && !isDigit(s[i+1]):
			if end, ok := skipDollar(s, i); ok {
				i = end
			} else {
				op(1)
				i++
			}
		case c == '(':
			open(')')
			justOpened = true
			i++
		case c == '[':
			op(1) // a subscript chains like an operator
			open(']')
			i++
		case c == '{':
			open('}')
			i++
		case c == ')' || c == ']' || c == '}':
			closeLevel(c)
			i++
		case c == ',' || c == ';':
			stack[len(stack)-1].endItem()
			i++
		case isDigit(c) || c == '.' && i+1 < len(s) && isDigit(s[i+1]):
			i = skipNumber(s, i)
		case isWordStart(c, lex):
			j := i + 1
			for j < len(s) && isWordPart(s[j], lex) {
				j++
			}
			if j == i+1 && (c == 'e' || c == 'E') && j < len(s) && s[j] == '\'' && dollar {
				i = skipEscapeString(s, j+1) // E'…': a backslash escapes the quote
				continue
			}
			w := upperWord(s[i:j])
			if afterOpen && queryWords[w] {
				stack[len(stack)-1].query = true
				queries++
				sh.Subqueries = max(sh.Subqueries, queries)
			}
			switch {
			case w == "CASE":
				open('E')
			case w == "END":
				closeLevel('E')
			case setWords[w]:
				stack[len(stack)-1].setOps++
			case opWords[w]:
				op(1)
			}
			i = j
		case isOpChar(c):
			// Every operator character counts: a run like -+-+-1 is as many
			// operators to some parsers.
			op(1)
			i++
		default:
			i++
		}
	}
	for len(stack) > 1 {
		c := stack[len(stack)-1].cost()
		stack = stack[:len(stack)-1]
		stack[len(stack)-1].child = max(stack[len(stack)-1].child, c)
	}
	sh.OperatorChain = stack[0].cost() - 1
	return sh
}

// skipBlockComment returns the end of the comment opening at s[i:] and the
// deepest nesting of comments in it; an unclosed comment runs to the end.
func skipBlockComment(s string, i int, nests bool) (end, deepest int) {
	depth := 0
	for i < len(s) {
		switch {
		case s[i] == '/' && i+1 < len(s) && s[i+1] == '*' && (nests || depth == 0):
			depth++
			deepest = max(deepest, depth)
			i += 2
		case s[i] == '*' && i+1 < len(s) && s[i+1] == '/':
			depth--
			i += 2
			if depth == 0 {
				return i, deepest
			}
		default:
			i++
		}
	}
	return i, deepest
}

// skipQuoted returns the end of a quoted run whose body starts at i; with
// doubled, a doubled quote is part of the body.
func skipQuoted(s string, i int, q byte, doubled bool) int {
	for i < len(s) {
		if s[i] == q {
			if doubled && i+1 < len(s) && s[i+1] == q {
				i += 2
				continue
			}
			return i + 1
		}
		i++
	}
	return i
}

// skipEscapeString returns the end of an E'…' string whose body starts at i:
// a backslash escapes the next byte, and two quotes are one.
func skipEscapeString(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == '\\':
			i += 2
		case s[i] == '\'' && i+1 < len(s) && s[i+1] == '\'':
			i += 2
		case s[i] == '\'':
			return i + 1
		default:
			i++
		}
	}
	return len(s)
}

// skipDollar returns the end of a $tag$…$tag$ string opening at s[i:], as
// PostgreSQL reads one; ok is false when s[i:] opens none.
func skipDollar(s string, i int) (int, bool) {
	j := i + 1
	for j < len(s) && s[j] != '$' {
		c := s[j]
		if !(c == '_' || c >= 0x80 || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || j > i+1 && isDigit(c)) {
			return 0, false
		}
		j++
	}
	if j >= len(s) {
		return 0, false
	}
	tag := s[i : j+1]
	for k := j + 1; k+len(tag) <= len(s); k++ {
		if s[k] == '$' && s[k:k+len(tag)] == tag {
			return k + len(tag), true
		}
	}
	return len(s), true // unterminated: the parser refuses it
}

func skipNumber(s string, i int) int {
	for i < len(s) {
		c := s[i]
		switch {
		case isDigit(c) || c == '.' || c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			i++
		case (c == '+' || c == '-') && (s[i-1] == 'e' || s[i-1] == 'E'):
			i++
		default:
			return i
		}
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isWordStart(c byte, lex Lexicon) bool {
	return c == '_' || c >= 0x80 || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' ||
		lex == LexTSQL && (c == '@' || c == '#')
}

func isWordPart(c byte, lex Lexicon) bool {
	return isWordStart(c, lex) || isDigit(c) || c == '$'
}

func isOpChar(c byte) bool {
	switch c {
	case '+', '-', '*', '/', '<', '>', '=', '~', '!', '@', '#', '%', '^', '&', '|', '`', '?', ':', '.':
		return true
	}
	return false
}

func upperWord(w string) string {
	if len(w) > 8 {
		return "" // no operator keyword is longer
	}
	b := []byte(w)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
