package sqlite

import (
	"fmt"
	"strings"

	"github.com/sondehq/sonde/pkg/guard"
)

// SQLite compiles a statement without handing out its tree, so the scopes of
// a statement — which SELECT names which table, and which lower bounds that
// SELECT's WHERE and join conditions establish — come from this small
// recursive-descent reader of SQLite's SELECT grammar. It does not decide
// what a statement reads: SQLite's authorizer does (Reader merges the two).
// It only places tables in scopes and finds bounds, and it is strict: a
// shape it does not follow makes it fail, and a failed reading places no
// table anywhere, so every large table the statement reads is unbounded.

// shape is what the scope reader learned about one statement.
type shape struct {
	scopes []guard.Scope
	// ctes holds every CTE name declared anywhere, ASCII letters folded as
	// SQLite folds them.
	ctes map[string]bool
	// verb is the keyword the statement's body begins with, after any WITH.
	verb string
	// err is why the reader could not follow the statement; nil when it did.
	err error
}

type parseError struct{ msg string }

func (e *parseError) Error() string { return e.msg }

type parser struct {
	toks  []token
	i     int
	sh    *shape
	depth int // of nested SELECT statements
	// cur collects the column references of the SELECT whose clauses are
	// being read (nil in ORDER BY, LIMIT, VALUES); clause names the clause.
	// cores counts the enclosing SELECTs whose columns are in view.
	cur    *colScope
	clause string
	cores  int
}

// colScope collects one SELECT's column references until its Columns are
// known.
type colScope struct {
	idx     int
	uses    []colUse
	aliases map[string]bool // the select list's output names, folded
	refs    map[string]bool // the names of its FROM items, folded
}

// colUse is a column reference and the clause it was written in.
type colUse struct {
	guard.ColumnUse
	clause string
}

// env is the CTE names visible at a point of the statement.
type env struct {
	names  map[string]bool
	parent *env
}

func (e *env) has(name string) bool {
	for ; e != nil; e = e.parent {
		if e.names[foldASCII(name)] {
			return true
		}
	}
	return false
}

// readShape reads the scopes of a SELECT (WITH, VALUES) statement. toks ends
// with kEOF and holds one statement.
func readShape(toks []token) (sh *shape) {
	sh = &shape{ctes: map[string]bool{}}
	p := &parser{toks: toks, sh: sh}
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(*parseError)
			if !ok {
				panic(r)
			}
			sh.err, sh.scopes = pe, nil
		}
	}()
	p.selectStmt(nil)
	if t := p.peek(); t.kind != kEOF {
		p.fail("unexpected %s", describe(t))
	}
	return sh
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) at(k int) token {
	if p.i+k < len(p.toks) {
		return p.toks[p.i+k]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != kEOF {
		p.i++
	}
	return t
}

func (p *parser) fail(format string, args ...any) {
	panic(&parseError{fmt.Sprintf(format, args...)})
}

func (p *parser) expectOp(s string) {
	if t := p.next(); !t.op(s) {
		p.fail("expected %q, found %s", s, describe(t))
	}
}

func (p *parser) expectKw(kw string) {
	if t := p.next(); !t.is(kw) {
		p.fail("expected %s, found %s", kw, describe(t))
	}
}

func (p *parser) accept(kw string) bool {
	if p.peek().is(kw) {
		p.i++
		return true
	}
	return false
}

// selectStmt: [WITH …] compound [ORDER BY …] [LIMIT …].
func (p *parser) selectStmt(e *env) {
	p.depth++
	cur := p.cur
	p.cur = nil
	defer func() { p.depth--; p.cur = cur }()
	if p.peek().is("WITH") {
		e = p.with(e)
	}
	t := p.peek()
	if p.depth == 1 {
		p.sh.verb = strings.ToUpper(t.text)
	}
	if !t.is("SELECT") && !t.is("VALUES") {
		p.fail("expected SELECT or VALUES, found %s", describe(t))
	}
	p.compound(e)
	if p.accept("ORDER") {
		p.expectKw("BY")
		p.exprList(e, stopClause)
	}
	if p.accept("LIMIT") {
		p.expr(e, stopClause)
		if p.accept("OFFSET") || p.peek().op(",") {
			if p.peek().op(",") {
				p.next()
			}
			p.expr(e, stopClause)
		}
	}
}

// with: WITH [RECURSIVE] name [(columns)] AS [[NOT] MATERIALIZED] (select), ….
// A CTE is visible in its own body (recursion), in the CTEs after it and in
// the statement; SQLite itself resolves every name, and a name this reader
// takes for a table SQLite took for a CTE is merely held to more rules.
func (p *parser) with(e *env) *env {
	p.expectKw("WITH")
	p.accept("RECURSIVE")
	ne := &env{names: map[string]bool{}, parent: e}
	for {
		t := p.next()
		if t.kind != kWord && t.kind != kIdent {
			p.fail("expected a CTE name, found %s", describe(t))
		}
		name := foldASCII(t.name())
		ne.names[name] = true
		p.sh.ctes[name] = true
		if p.peek().op("(") {
			p.skipParens()
		}
		p.expectKw("AS")
		if p.accept("NOT") {
			p.expectKw("MATERIALIZED")
		} else {
			p.accept("MATERIALIZED")
		}
		p.expectOp("(")
		p.selectStmt(ne)
		p.expectOp(")")
		if !p.peek().op(",") {
			return ne
		}
		p.next()
	}
}

// compound: core ((UNION [ALL] | INTERSECT | EXCEPT) core)*.
func (p *parser) compound(e *env) {
	for {
		p.core(e)
		switch t := p.peek(); {
		case t.is("UNION"):
			p.next()
			p.accept("ALL")
		case t.is("INTERSECT"), t.is("EXCEPT"):
			p.next()
		default:
			return
		}
	}
}

// core is one SELECT or VALUES: a scope of its own.
func (p *parser) core(e *env) {
	if p.accept("VALUES") {
		for {
			p.expectOp("(")
			p.exprList(e, stopNone)
			p.expectOp(")")
			if !p.peek().op(",") {
				return
			}
			p.next()
		}
	}
	p.expectKw("SELECT")
	idx := len(p.sh.scopes)
	p.sh.scopes = append(p.sh.scopes, guard.Scope{Nested: p.cores > 0})
	cs := &colScope{idx: idx, aliases: map[string]bool{}, refs: map[string]bool{}}
	cur, clause := p.cur, p.clause
	p.cur = cs
	p.cores++
	defer func() { p.cur, p.clause = cur, clause; p.cores-- }()
	if !p.accept("DISTINCT") {
		p.accept("ALL")
	}
	p.clause = "select"
	p.exprList(e, stopClause)
	if p.accept("FROM") {
		p.clause = "from"
		p.fromList(idx, e)
	}
	if p.accept("WHERE") {
		p.clause = "where"
		p.bounds(idx, p.expr(e, stopClause))
	}
	if p.accept("GROUP") {
		p.clause = "group"
		p.expectKw("BY")
		p.exprList(e, stopClause)
	}
	if p.accept("HAVING") {
		p.clause = "having"
		p.expr(e, stopClause)
	}
	p.clause = "window"
	if p.accept("WINDOW") {
		for {
			p.next() // the window's name
			p.expectKw("AS")
			p.expr(e, stopClause)
			if !p.peek().op(",") {
				break
			}
			p.next()
		}
	}
	switch t := p.peek(); {
	case t.kind == kEOF, t.op(")"), t.is("UNION"), t.is("INTERSECT"), t.is("EXCEPT"), t.is("ORDER"), t.is("LIMIT"):
	default:
		p.fail("unexpected %s after a SELECT's clauses", describe(t))
	}
	p.sh.scopes[idx].Columns = cs.columns()
}

// fromList: source (joinop source [ON expr | USING (columns)])*.
// A bound in the ON of an outer join limits only the side that join does not
// preserve: the right side's tables for LEFT, the left side's (everything
// joined before it) for RIGHT, none for FULL. Inner and cross joins, like
// the WHERE, limit every table of the scope.
func (p *parser) fromList(idx int, e *env) {
	left := p.sourceRefs(idx, e)
	// single is the one table read so far, for the columns of a USING; ""
	// once the left side is more than one table.
	single := p.single(idx, len(left))
	for {
		t := p.peek()
		outer := ""
		switch {
		case t.op(","):
			p.next()
		case isJoinWord(t):
			for isJoinWord(p.peek()) && !p.peek().is("JOIN") {
				switch w := strings.ToUpper(p.next().text); w {
				case "LEFT", "RIGHT", "FULL":
					outer = w
				}
			}
			p.expectKw("JOIN")
		default:
			return
		}
		derived := len(p.sh.scopes[idx].Derived)
		right := p.sourceRefs(idx, e)
		switch {
		case p.accept("ON"):
			var limits []string
			switch outer {
			case "LEFT":
				limits = append([]string{}, right...)
			case "RIGHT":
				limits = append([]string{}, left...)
			case "FULL":
				limits = []string{}
			}
			p.boundsLimiting(idx, p.expr(e, stopJoin), limits)
		case p.accept("USING"):
			start := p.i
			p.skipParens()
			sides := []string{single}
			if len(right) == 1 && len(p.sh.scopes[idx].Derived) == derived {
				sides = append(sides, right[0])
			}
			p.using(p.toks[start:p.i], sides)
		}
		left = append(left, right...)
		single = ""
	}
}

// sourceRefs reads one source and returns the refs (alias, or name as
// written) of the tables it placed in scope idx.
func (p *parser) sourceRefs(idx int, e *env) []string {
	from := len(p.sh.scopes[idx].Tables)
	p.source(idx, e)
	var refs []string
	for _, t := range p.sh.scopes[idx].Tables[from:] {
		if t.Alias != "" {
			refs = append(refs, t.Alias)
		} else {
			refs = append(refs, t.Name)
		}
	}
	return refs
}

// source is one item of a FROM: a table, a table-valued function, a
// subquery, or a parenthesised join.
func (p *parser) source(idx int, e *env) {
	t := p.peek()
	switch {
	case t.op("("):
		p.next()
		sub := false
		if n := p.peek(); n.is("SELECT") || n.is("WITH") || n.is("VALUES") {
			// SQLite has no LATERAL: a FROM subquery sees only the columns
			// of the SELECTs enclosing this one.
			cores := p.cores
			if !p.sh.scopes[idx].Nested {
				p.cores = 0
			}
			p.selectStmt(e)
			p.cores, sub = cores, true
		} else {
			p.fromList(idx, e)
		}
		p.expectOp(")")
		if alias := p.alias(); sub || alias != "" {
			p.derived(idx, alias)
		}
		return
	case t.kind != kWord && t.kind != kIdent:
		p.fail("expected a table, found %s", describe(t))
	}
	p.next()
	schema, name := "", t.name()
	if p.peek().op(".") {
		p.next()
		n := p.next()
		if n.kind != kWord && n.kind != kIdent {
			p.fail("expected a table name after %q, found %s", name, describe(n))
		}
		schema, name = name, n.name()
	}
	if p.peek().op("(") {
		// A table-valued function: its arguments may hold subqueries; what
		// it reads is the authorizer's to say.
		p.next()
		if !p.peek().op(")") {
			p.exprList(e, stopNone)
		}
		p.expectOp(")")
		p.derived(idx, p.alias())
		return
	}
	alias := p.alias()
	if p.accept("INDEXED") {
		p.expectKw("BY")
		p.next()
	} else if p.peek().is("NOT") && p.at(1).is("INDEXED") {
		p.i += 2
	}
	ref := alias
	if ref == "" {
		ref = name
	}
	if schema == "" && e.has(name) {
		p.derived(idx, ref)
		return // a CTE, not a table
	}
	p.sh.scopes[idx].Tables = append(p.sh.scopes[idx].Tables, guard.Table{Schema: schema, Name: name, Alias: alias})
	if p.cur != nil {
		p.cur.refs[foldASCII(ref)] = true
	}
}

// derived records a FROM item of scope idx that is not a table — a
// subquery, a table-valued function, a CTE, an aliased join — under the
// name it is referred to by ("" when none).
func (p *parser) derived(idx int, name string) {
	p.sh.scopes[idx].Derived = append(p.sh.scopes[idx].Derived, name)
	if p.cur != nil && name != "" {
		p.cur.refs[foldASCII(name)] = true
	}
}

// single returns the ref of scope idx's one table when its FROM so far is
// exactly that table (n refs, no derived item).
func (p *parser) single(idx, n int) string {
	sc := p.sh.scopes[idx]
	if n != 1 || len(sc.Tables) != 1 || len(sc.Derived) != 0 {
		return ""
	}
	if sc.Tables[0].Alias != "" {
		return sc.Tables[0].Alias
	}
	return sc.Tables[0].Name
}

// using records the columns of a USING list (its tokens with the
// parentheses) as uses of each side that is one table, refs naming them
// ("" for a side that is not): a USING column is a column of both sides.
func (p *parser) using(list []token, refs []string) {
	if p.cur == nil {
		return
	}
	for _, t := range list {
		if t.kind != kWord && t.kind != kIdent {
			continue
		}
		for _, ref := range refs {
			if ref != "" {
				p.cur.uses = append(p.cur.uses, colUse{guard.ColumnUse{Qualifier: ref, Name: t.name()}, p.clause})
			}
		}
	}
}

// alias reads an optional [AS] alias.
func (p *parser) alias() string {
	if p.accept("AS") {
		t := p.next()
		if t.kind != kWord && t.kind != kIdent && t.kind != kString {
			p.fail("expected an alias after AS, found %s", describe(t))
		}
		return strings.Trim(t.name(), "'")
	}
	t := p.peek()
	if t.kind == kIdent || t.kind == kWord && !reserved[strings.ToUpper(t.text)] {
		p.next()
		return t.name()
	}
	return ""
}

// stop decides where an expression ends at depth 0.
type stop int

const (
	stopNone   stop = iota // only at ')' or ',' (lists inside parentheses)
	stopClause             // also at a clause keyword
	stopJoin               // also at a clause keyword or the next join
)

func (p *parser) exprList(e *env, s stop) {
	for {
		p.expr(e, s)
		if !p.peek().op(",") {
			return
		}
		p.next()
	}
}

// expr skims one expression and returns its tokens; every subquery inside it
// is read as a scope of its own. CASE … END counts as a bracket.
func (p *parser) expr(e *env, s stop) []token {
	start := p.i
	depth := 0
	for {
		t := p.peek()
		switch {
		case t.kind == kEOF || t.kind == kSemi:
			if depth > 0 {
				p.fail("unbalanced parentheses")
			}
			return p.toks[start:p.i]
		case t.kind == kIllegal:
			p.fail("SQLite cannot read %s", describe(t))
		case t.op("("):
			p.next()
			if n := p.peek(); n.is("SELECT") || n.is("WITH") || n.is("VALUES") {
				p.selectStmt(e)
				p.expectOp(")")
				continue
			}
			depth++
			continue
		case t.op(")"):
			if depth == 0 {
				return p.toks[start:p.i]
			}
			depth--
		case t.is("CASE"):
			depth++
		case t.is("END"):
			depth--
		case depth == 0 && t.op(","):
			return p.toks[start:p.i]
		case depth == 0 && s != stopNone && t.kind == kWord:
			kw := strings.ToUpper(t.text)
			if clauseWords[kw] && !(kw == "FROM" && p.i > start && p.toks[p.i-1].is("DISTINCT")) {
				return p.toks[start:p.i]
			}
			if s == stopJoin && (kw == "ON" || kw == "USING" || isJoinWord(t)) {
				return p.toks[start:p.i]
			}
		}
		p.note(depth)
		p.next()
	}
}

// skipParens skips a parenthesised list that holds no subquery.
func (p *parser) skipParens() {
	p.expectOp("(")
	for depth := 1; depth > 0; {
		t := p.next()
		switch {
		case t.kind == kEOF:
			p.fail("unbalanced parentheses")
		case t.op("("):
			depth++
		case t.op(")"):
			depth--
		case t.is("SELECT"):
			p.fail("a subquery where a list of names belongs")
		}
	}
}

// bounds adds to scope idx the lower bounds cond establishes: its top-level
// AND conjuncts that bound a column from below against a value.
func (p *parser) bounds(idx int, cond []token) { p.boundsLimiting(idx, cond, nil) }

// boundsLimiting is bounds for a condition that limits only the tables
// limits names (nil: every table of the scope; see guard.Bound.Limits).
func (p *parser) boundsLimiting(idx int, cond []token, limits []string) {
	for _, c := range conjuncts(cond) {
		if b, ok := lowerBound(c); ok {
			b.Limits = limits
			p.sh.scopes[idx].Bounds = append(p.sh.scopes[idx].Bounds, b)
		}
	}
}

// conjuncts splits an expression at its top-level ANDs; a parenthesised
// conjunct made only of ANDs is split in turn. An expression whose top level
// is an OR is one conjunct (which bounds nothing). The AND of a BETWEEN
// stays inside it.
func conjuncts(x []token) [][]token {
	x = stripParens(x)
	var out [][]token
	depth, start, between := 0, 0, false
	for i, t := range x {
		switch {
		case t.op("(") || t.is("CASE"):
			depth++
		case t.op(")") || t.is("END"):
			depth--
		case depth > 0:
		case t.is("OR"):
			return [][]token{x}
		case t.is("BETWEEN"):
			between = true
		case t.is("AND") && between:
			between = false
		case t.is("AND"):
			out = append(out, x[start:i])
			start = i + 1
		}
	}
	if len(out) == 0 {
		return [][]token{x}
	}
	out = append(out, x[start:])
	var flat [][]token
	for _, c := range out {
		flat = append(flat, conjuncts(c)...)
	}
	return flat
}

// stripParens removes parentheses that enclose the whole of x.
func stripParens(x []token) []token {
	for len(x) >= 2 && x[0].op("(") && closing(x, 0) == len(x)-1 {
		x = x[1 : len(x)-1]
	}
	return x
}

// closing returns the index of the parenthesis closing the one at x[i].
func closing(x []token, i int) int {
	depth := 0
	for j := i; j < len(x); j++ {
		switch {
		case x[j].op("("):
			depth++
		case x[j].op(")"):
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// lowerBound recognises a conjunct that bounds a column from below:
// col >= v, col > v, col = v, v <= col, v < col, v = col, col BETWEEN v AND v,
// col IN (v, …), NOT (col < v) and NOT (col <= v), where v is a value.
func lowerBound(c []token) (guard.Bound, bool) {
	c = stripParens(c)
	if len(c) == 0 {
		return guard.Bound{}, false
	}
	if c[0].is("NOT") {
		inner := stripParens(c[1:])
		if b, rest, ok := colRef(inner); ok && len(rest) > 0 && (rest[0].op("<") || rest[0].op("<=")) && isValue(rest[1:]) {
			return valued(b, rest[1:]), true
		}
		if i := comparison(inner); i > 0 && (inner[i].op(">") || inner[i].op(">=")) && isValue(inner[:i]) {
			if b, rest, ok := colRef(inner[i+1:]); ok && len(rest) == 0 {
				return valued(b, inner[:i]), true
			}
		}
		return guard.Bound{}, false
	}
	if b, rest, ok := colRef(c); ok && len(rest) > 0 {
		switch op := rest[0]; {
		case op.op(">=") || op.op(">") || op.op("=") || op.op("=="):
			return valued(b, rest[1:]), isValue(rest[1:])
		case op.is("BETWEEN"):
			for i := 1; i < len(rest); i++ {
				if rest[i].is("AND") && isValue(rest[1:i]) && isValue(rest[i+1:]) {
					return valued(b, rest[1:i]), true
				}
			}
		case op.is("IN"):
			if len(rest) >= 3 && rest[1].op("(") && closing(rest, 1) == len(rest)-1 {
				list := rest[2 : len(rest)-1]
				return valued(b, splitList(list)...), isValueList(list)
			}
		}
	}
	if i := comparison(c); i > 0 && (c[i].op("<=") || c[i].op("<") || c[i].op("=") || c[i].op("==")) && isValue(c[:i]) {
		if b, rest, ok := colRef(c[i+1:]); ok && len(rest) == 0 {
			return valued(b, c[:i]), true
		}
	}
	return guard.Bound{}, false
}

// comparison returns the index of the first comparison operator at depth 0.
func comparison(c []token) int {
	depth := 0
	for i, t := range c {
		switch {
		case t.op("("):
			depth++
		case t.op(")"):
			depth--
		case depth == 0 && t.kind == kOp && (t.text == "<" || t.text == "<=" || t.text == ">" || t.text == ">=" || t.text == "=" || t.text == "=="):
			return i
		}
	}
	return -1
}

// colRef reads [[schema.]table.]column at the start of c.
func colRef(c []token) (guard.Bound, []token, bool) {
	var names []string
	i := 0
	for {
		if i >= len(c) || !isName(c[i]) {
			return guard.Bound{}, nil, false
		}
		names = append(names, c[i].name())
		i++
		if i < len(c) && c[i].op(".") && len(names) < 3 {
			i++
			continue
		}
		break
	}
	b := guard.Bound{Column: names[len(names)-1]}
	if len(names) > 1 {
		b.Qualifier = names[len(names)-2]
	}
	return b, c[i:], true
}

func isName(t token) bool {
	return t.kind == kIdent || t.kind == kWord && !reserved[strings.ToUpper(t.text)] && !valueWords[strings.ToUpper(t.text)]
}

// isValue reports whether x is a constant or a function of constants:
// literals, parameters, arithmetic, CAST and allowlisted functions of them.
// No column, no subquery.
func isValue(x []token) bool {
	if len(x) == 0 {
		return false
	}
	depth := 0
	inCast := []bool{}
	for i := 0; i < len(x); i++ {
		t := x[i]
		switch t.kind {
		case kString, kNumber, kBlob, kVariable:
			continue
		case kOp:
			switch t.text {
			case "(":
				depth++
				inCast = append(inCast, i > 0 && x[i-1].is("CAST"))
			case ")":
				depth--
				if depth < 0 {
					return false
				}
				inCast = inCast[:len(inCast)-1]
			case ",":
				if depth == 0 {
					return false
				}
			case "+", "-", "*", "/", "%", "||", "&", "|", "<<", ">>", "~":
			default:
				return false
			}
			continue
		case kWord:
			kw := strings.ToUpper(t.text)
			switch {
			case valueWords[kw]:
				continue
			case kw == "CAST" && i+1 < len(x) && x[i+1].op("("):
				continue
			case len(inCast) > 0 && inCast[len(inCast)-1] && (kw == "AS" || i > 0 && (x[i-1].is("AS") || x[i-1].kind == kWord)):
				continue // CAST(v AS type name)
			case i+1 < len(x) && x[i+1].op("(") && allowedFunction(t.text) && !aggregates[strings.ToLower(t.text)]:
				continue
			}
		}
		return false
	}
	return depth == 0
}

// isValueList reports whether x is a comma-separated list of values.
func isValueList(x []token) bool {
	depth, start := 0, 0
	for i, t := range x {
		switch {
		case t.op("("):
			depth++
		case t.op(")"):
			depth--
		case depth == 0 && t.op(","):
			if !isValue(x[start:i]) {
				return false
			}
			start = i + 1
		}
	}
	return isValue(x[start:])
}

func isJoinWord(t token) bool {
	if t.kind != kWord {
		return false
	}
	switch strings.ToUpper(t.text) {
	case "JOIN", "NATURAL", "LEFT", "RIGHT", "FULL", "OUTER", "INNER", "CROSS":
		return true
	}
	return false
}

// clauseWords end an expression at depth 0.
var clauseWords = set("FROM", "WHERE", "GROUP", "HAVING", "WINDOW", "ORDER", "LIMIT", "OFFSET",
	"UNION", "INTERSECT", "EXCEPT")

// reserved words are never an alias or a column of a bound.
var reserved = set("FROM", "WHERE", "GROUP", "HAVING", "WINDOW", "ORDER", "LIMIT", "OFFSET", "UNION",
	"INTERSECT", "EXCEPT", "ON", "USING", "JOIN", "NATURAL", "LEFT", "RIGHT", "FULL", "OUTER", "INNER",
	"CROSS", "INDEXED", "NOT", "AND", "OR", "SELECT", "VALUES", "WITH", "AS", "CASE", "WHEN", "THEN",
	"ELSE", "END", "IN", "IS", "BETWEEN", "LIKE", "GLOB", "MATCH", "REGEXP", "EXISTS", "CAST", "COLLATE",
	"ESCAPE", "DISTINCT", "ALL", "BY", "NULL", "ISNULL", "NOTNULL", "RETURNING")

// valueWords are the keywords that are values.
var valueWords = set("NULL", "TRUE", "FALSE", "CURRENT_DATE", "CURRENT_TIME", "CURRENT_TIMESTAMP")

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// describe names a token for a message.
func describe(t token) string {
	switch t.kind {
	case kEOF:
		return "the end of the statement"
	case kWord:
		return strings.ToUpper(t.text)
	}
	return fmt.Sprintf("%q", t.text)
}
