package mssql

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// node is what the bound rules need of an expression: its shape where it is
// a comparison, a column or a conjunction, and whether it is a value (a
// constant or a function of constants: no column, no subquery).
type node struct {
	op    string // "col", "cmp", "between", "in", "not", "and", "or", "val" (anything else)
	cmp   string // the operator of a "cmp"
	neg   bool   // NOT BETWEEN, NOT IN
	kids  []*node
	qual  string // the qualifier of a "col"
	name  string // the column of a "col"
	konst bool
	// bv is what a constant reduces to as a bound's value (BoundUnknown
	// where the reader does not evaluate it).
	bv guard.BoundValue
	// sz bounds the bytes the expression builds.
	sz size
}

func value(konst bool) *node { return &node{op: "val", konst: konst, sz: small()} }

// built is a value of the size sz.
func built(konst bool, sz size) *node { return &node{op: "val", konst: konst, sz: sz} }

func allKonst(ns ...*node) bool {
	for _, n := range ns {
		if !n.konst {
			return false
		}
	}
	return true
}

// expr: OR of ANDs of [NOT] predicates.
func (p *parser) expr() *node {
	p.enter()
	defer p.leave()
	l := p.andExpr()
	for p.accept("OR") {
		r := p.andExpr()
		l = &node{op: "or", kids: []*node{l, r}, konst: l.konst && r.konst}
	}
	return l
}

func (p *parser) andExpr() *node {
	l := p.notExpr()
	for p.accept("AND") {
		r := p.notExpr()
		l = &node{op: "and", kids: []*node{l, r}, konst: l.konst && r.konst}
	}
	return l
}

func (p *parser) notExpr() *node {
	if p.accept("NOT") {
		p.enter()
		defer p.leave()
		x := p.notExpr()
		return &node{op: "not", kids: []*node{x}, konst: x.konst}
	}
	return p.predicate()
}

var comparisons = set(`= <> != < > <= >= !< !>`)

func (p *parser) predicate() *node {
	if p.accept("EXISTS") {
		p.subquery()
		return value(false)
	}
	l := p.additive()
	t := p.peek()
	switch {
	case t.kind == tPunct && comparisons[t.text]:
		p.i++
		if q := p.peek(); (q.is("ALL") || q.is("ANY") || q.is("SOME")) && p.peekAt(1).isPunct("(") {
			p.i++
			p.subquery()
			return value(false)
		}
		r := p.additive()
		return &node{op: "cmp", cmp: t.text, kids: []*node{l, r}, konst: l.konst && r.konst}
	case t.is("IS"):
		p.i++
		p.accept("NOT")
		if p.accept("DISTINCT") {
			p.expect("FROM")
			r := p.additive()
			return value(l.konst && r.konst)
		}
		p.expect("NULL")
		return value(l.konst)
	}
	neg := p.peek().is("NOT") && (p.peekAt(1).is("BETWEEN") || p.peekAt(1).is("LIKE") || p.peekAt(1).is("IN"))
	if neg {
		p.i++
	}
	switch {
	case p.accept("BETWEEN"):
		lo := p.additive()
		p.expect("AND")
		hi := p.additive()
		return &node{op: "between", neg: neg, kids: []*node{l, lo, hi}, konst: allKonst(l, lo, hi)}
	case p.accept("LIKE"):
		r := p.additive()
		k := l.konst && r.konst
		if p.accept("ESCAPE") {
			k = p.additive().konst && k
		}
		return value(k)
	case p.accept("IN"):
		if p.startsQuery() {
			p.subquery()
			return &node{op: "in", neg: neg, kids: []*node{l, value(false)}}
		}
		p.expectPunct("(")
		n := &node{op: "in", neg: neg, kids: []*node{l}, konst: l.konst}
		for {
			x := p.expr()
			n.kids = append(n.kids, x)
			n.konst = n.konst && x.konst
			if !p.acceptPunct(",") {
				break
			}
		}
		p.expectPunct(")")
		return n
	}
	if neg {
		p.unexpected("BETWEEN, LIKE or IN after NOT")
	}
	return l
}

// subquery: ( query ), its own scope.
func (p *parser) subquery() {
	p.expectPunct("(")
	p.query()
	p.expectPunct(")")
}

func (p *parser) additive() *node {
	l := p.multiplicative()
	for {
		t := p.peek()
		if !(t.isPunct("+") || t.isPunct("-") || t.isPunct("&") || t.isPunct("|") || t.isPunct("^")) {
			return l
		}
		p.i++
		r := p.multiplicative()
		n := built(l.konst && r.konst, p.checkSize("concatenating with +", join(l.sz, r.sz)))
		n.bv = arith(t.text, l.bv, r.bv)
		l = n
	}
}

func (p *parser) multiplicative() *node {
	l := p.unary()
	for {
		t := p.peek()
		if !(t.isPunct("*") || t.isPunct("/") || t.isPunct("%")) {
			return l
		}
		p.i++
		r := p.unary()
		n := value(l.konst && r.konst)
		n.bv = arith(t.text, l.bv, r.bv)
		l = n
	}
}

func (p *parser) unary() *node {
	if t := p.peek(); t.isPunct("-") || t.isPunct("+") || t.isPunct("~") {
		p.i++
		p.enter()
		defer p.leave()
		x := p.unary()
		n := built(x.konst, x.sz)
		if t.isPunct("-") {
			n.bv = arith("-", num(0), x.bv)
		} else if t.isPunct("+") {
			n.bv = x.bv
		}
		return n
	}
	return p.postfix()
}

func (p *parser) postfix() *node {
	n := p.primary()
	for {
		t := p.peek()
		switch {
		case t.is("COLLATE"):
			p.i++
			p.ident("a collation name")
		case t.is("AT") && p.peekAt(1).is("TIME") && p.peekAt(2).is("ZONE"):
			p.i += 3
			z := p.primary()
			bv := n.bv
			n = value(n.konst && z.konst)
			n.bv = bv
		case t.isPunct(".") || t.isPunct("::"):
			p.fail(contracts.RefuseUnsupported,
				"a method call on a value (x.value(…), geography::Point(…)) is not read by the guard",
				"use the built-in functions on the allowlist")
		default:
			return n
		}
	}
}

func (p *parser) primary() *node {
	t := p.peek()
	switch t.kind {
	case tNumber, tString, tBinary:
		p.i++
		n := value(true)
		n.bv, n.sz = literal(t)
		return n
	case tSystemVar:
		p.i++
		if !systemVars[strings.ToUpper(t.text)] {
			p.fail(contracts.RefuseFunctionDenied, fmt.Sprintf("%s is not on the allowlist", t.text),
				"read only "+allowedList(systemVars))
		}
		return value(true)
	case tVariable:
		p.fail(contracts.RefuseUnsupported,
			fmt.Sprintf("%s is a variable; declaring or setting it takes a statement of its own", t.text),
			"write the value into the query as a literal")
	case tPunct:
		if t.isPunct("(") {
			if p.peekAt(1).is("SELECT") || p.peekAt(1).is("WITH") {
				p.subquery()
				return built(false, size{lob: true, data: true})
			}
			p.i++
			n := p.expr()
			p.expectPunct(")")
			return n
		}
	case tQuoted:
		return p.name()
	case tWord:
		return p.word(t)
	}
	p.unexpected("an expression")
	return nil
}

func (p *parser) word(t token) *node {
	u := t.upper()
	call := p.peekAt(1).isPunct("(")
	switch {
	case u == "NULL":
		p.i++
		n := value(true)
		n.bv = guard.BoundValue{Kind: guard.BoundNull}
		n.sz = size{}
		return n
	case u == "CASE":
		return p.caseExpr()
	case u == "NEXT" && p.peekAt(1).is("VALUE") && p.peekAt(2).is("FOR"):
		p.fail(contracts.RefuseNotReadOnly,
			"NEXT VALUE FOR advances a sequence, and a rollback does not undo it",
			"drop NEXT VALUE FOR; use ROW_NUMBER() OVER (…) to number rows")
	case (u == "CAST" || u == "TRY_CAST") && call:
		p.i += 2
		x := p.expr()
		p.expect("AS")
		ty := p.typeName()
		p.expectPunct(")")
		n := built(x.konst, castSize(x.sz, ty))
		n.bv = castValue(x.bv, ty)
		return n
	case (u == "CONVERT" || u == "TRY_CONVERT") && call:
		p.i += 2
		ty := p.typeName()
		p.expectPunct(",")
		x := p.expr()
		k := x.konst
		style := false
		if p.acceptPunct(",") {
			k = p.expr().konst && k
			style = true
		}
		p.expectPunct(")")
		n := built(k, castSize(x.sz, ty))
		if !style {
			n.bv = castValue(x.bv, ty)
		}
		return n
	case (u == "PARSE" || u == "TRY_PARSE") && call:
		p.i += 2
		x := p.expr()
		p.expect("AS")
		ty := p.typeName()
		k := x.konst
		if p.accept("USING") {
			k = p.expr().konst && k
		}
		p.expectPunct(")")
		n := built(k, castSize(x.sz, ty))
		n.bv = x.bv
		return n
	case niladic[u] && !call:
		p.i++
		n := value(true)
		if nowFunctions[u] {
			n.bv = guard.BoundValue{Kind: guard.BoundNow}
		}
		return n
	case reserved[u] && !call:
		p.unexpected("an expression")
	}
	return p.name()
}

// name: a column reference (up to four parts, or qualifier.*) or a
// function call.
func (p *parser) name() *node {
	start := p.peek()
	var parts []string
	for {
		t := p.next()
		switch {
		case t.kind == tWord && (len(parts) == 0 || !reserved[t.upper()]) || t.kind == tQuoted:
			parts = append(parts, t.text)
		case t.isPunct("*") && len(parts) > 0:
			return value(false) // qualifier.*
		default:
			p.i--
			p.unexpected("a name")
		}
		if !p.acceptPunct(".") {
			break
		}
	}
	if p.peek().isPunct("(") {
		return p.call(start, parts)
	}
	if len(parts) > 4 {
		p.unexpected("a column name of at most four parts")
	}
	n := &node{op: "col", name: parts[len(parts)-1], sz: size{lob: true, data: true}}
	if len(parts) > 1 {
		n.qual = parts[len(parts)-2]
	}
	return n
}

// call reads a function call and holds its name to the allowlist.
func (p *parser) call(start token, parts []string) *node {
	full := strings.Join(parts, ".")
	name := strings.ToUpper(parts[len(parts)-1])
	if len(parts) > 1 || start.kind != tWord || !functions[name] {
		p.denyFunction(full, name, len(parts) > 1 || start.kind != tWord)
	}
	part, args, star := p.args(name)
	k := !star
	for _, a := range args {
		k = k && a.konst
	}
	n := built(false, p.callSize(name, args))
	if k {
		n.bv = callValue(name, part, args)
	}
	if p.accept("WITHIN") {
		p.expect("GROUP")
		p.expectPunct("(")
		p.expect("ORDER")
		p.expect("BY")
		p.orderItems()
		p.expectPunct(")")
		k = false
	}
	if (p.peek().is("IGNORE") || p.peek().is("RESPECT")) && p.peekAt(1).is("NULLS") {
		p.i += 2
	}
	if p.accept("OVER") {
		if p.acceptPunct("(") {
			p.windowSpec()
			p.expectPunct(")")
		} else {
			p.ident("a window name")
		}
		k = false
	}
	n.konst = k
	return n
}

func (p *parser) denyFunction(full, name string, qualified bool) {
	switch {
	case externalTableFunctions[name]:
		p.fail(contracts.RefuseTableFunction,
			fmt.Sprintf("%s reads from outside the query's tables (files, other servers, text, documents or change tracking)", name),
			"read the connection's tables; allowed table functions: "+allowedList(tableFunctions))
	case strings.HasPrefix(name, "XP_") || strings.HasPrefix(name, "SP_"):
		p.fail(contracts.RefuseFunctionDenied,
			fmt.Sprintf("%s is a system or extended stored procedure: the whole xp_/sp_ family is denied", full),
			"compute the value with the built-in functions on the allowlist")
	case strings.HasPrefix(name, "FN_"):
		p.fail(contracts.RefuseFunctionDenied,
			fmt.Sprintf("%s is a system function: the fn_ family (audit files, extended-event files, logs, traces) is denied", full),
			"read the connection's tables")
	case qualified:
		p.fail(contracts.RefuseFunctionDenied,
			fmt.Sprintf("%s is a user-defined or delimited function name; only built-in functions on the allowlist may be called", full),
			"compute the value with built-in functions: aggregates, window, string, math, date, conversion, JSON_VALUE/ISJSON")
	}
	p.fail(contracts.RefuseFunctionDenied,
		fmt.Sprintf("%s is not on the allowlist of functions", full),
		"compute the value with built-in functions: aggregates, window, string, math, date, conversion, JSON_VALUE/ISJSON")
}

// args reads a call's parenthesised arguments: the date part of the
// functions that take one first, the other arguments, and whether the
// argument is *.
func (p *parser) args(name string) (part string, args []*node, star bool) {
	p.expectPunct("(")
	if p.acceptPunct(")") {
		return "", nil, false
	}
	if !p.accept("DISTINCT") {
		p.accept("ALL")
	}
	switch {
	case datepartFirst[name]:
		part = p.ident("a date part")
		if !p.acceptPunct(",") {
			p.expectPunct(")")
			return part, nil, false
		}
	case name == "TRIM":
		if t := p.peek(); t.is("LEADING") || t.is("TRAILING") || t.is("BOTH") {
			p.i++
		}
		if !p.accept("FROM") {
			args = append(args, p.expr())
			if !p.accept("FROM") {
				p.expectPunct(")")
				return "", args, false
			}
		}
		args = append([]*node{p.expr()}, args...)
		p.expectPunct(")")
		return "", args, false
	case p.peek().isPunct("*"):
		p.i++
		p.expectPunct(")")
		return "", nil, true
	}
	for {
		args = append(args, p.expr())
		if !p.acceptPunct(",") {
			break
		}
	}
	p.expectPunct(")")
	return part, args, false
}

// windowSpec: [window] [PARTITION BY …] [ORDER BY …] [ROWS|RANGE frame].
func (p *parser) windowSpec() {
	if t := p.peek(); t.kind == tWord && !reserved[t.upper()] && !t.is("PARTITION") && !t.is("ROWS") && !t.is("RANGE") {
		p.i++
	}
	if p.accept("PARTITION") {
		p.expect("BY")
		for {
			p.expr()
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	if p.accept("ORDER") {
		p.expect("BY")
		p.orderItems()
	}
	if p.accept("ROWS") || p.accept("RANGE") {
		if p.accept("BETWEEN") {
			p.frameBound()
			p.expect("AND")
		}
		p.frameBound()
	}
}

func (p *parser) frameBound() {
	switch {
	case p.accept("UNBOUNDED"):
	case p.accept("CURRENT"):
		p.expect("ROW")
		return
	default:
		p.additive()
	}
	if !p.accept("PRECEDING") {
		p.expect("FOLLOWING")
	}
}

func (p *parser) caseExpr() *node {
	p.expect("CASE")
	k := true
	if !p.peek().is("WHEN") {
		k = p.expr().konst
	}
	if !p.peek().is("WHEN") {
		p.unexpected("WHEN")
	}
	var results []size
	for p.accept("WHEN") {
		k = p.expr().konst && k
		p.expect("THEN")
		r := p.expr()
		k = r.konst && k
		results = append(results, r.sz)
	}
	if p.accept("ELSE") {
		r := p.expr()
		k = r.konst && k
		results = append(results, r.sz)
	}
	p.expect("END")
	n := built(k, largest(results...))
	return n
}

// typeName: a data type, int, decimal(10, 2), nvarchar(max), double
// precision, sys.int. A type that is not one of SQL Server's own is refused:
// an alias or CLR user type runs user .NET code (its Parse) in the cast.
func (p *parser) typeName() typ {
	t := p.next()
	if t.kind != tWord && t.kind != tQuoted {
		p.i--
		p.unexpected("a data type")
	}
	parts := []string{t.text}
	for p.acceptPunct(".") {
		parts = append(parts, p.ident("a data type"))
	}
	name := strings.ToLower(parts[len(parts)-1])
	if len(parts) > 2 || len(parts) == 2 && !strings.EqualFold(parts[0], "sys") || !builtinTypes[name] {
		p.fail(contracts.RefuseFunctionDenied,
			fmt.Sprintf("%s is not one of SQL Server's own data types: a cast to a user type (an alias or CLR type) runs that type's code, which the guard cannot read", strings.Join(parts, ".")),
			"cast to a built-in type: int, bigint, decimal(p, s), float, date, datetime2, varchar(n), nvarchar(n), varbinary(n), uniqueidentifier")
	}
	ty := typ{name: name, max: name == "text" || name == "ntext" || name == "image" || name == "xml"}
	if p.accept("PRECISION") || p.accept("VARYING") {
		return ty
	}
	if name == "national" {
		p.accept("CHAR")
		p.accept("CHARACTER")
		p.accept("VARYING")
	}
	if p.acceptPunct("(") {
		for first := true; ; first = false {
			t := p.next()
			switch {
			case t.is("MAX"):
				ty.max = true
			case t.kind == tNumber:
				if first {
					ty.length, _ = strconv.ParseFloat(t.text, 64)
				}
			default:
				p.i--
				p.unexpected("a length, precision or MAX")
			}
			if !p.acceptPunct(",") {
				break
			}
		}
		p.expectPunct(")")
	}
	return ty
}
