package mssql

import (
	"time"

	"github.com/sondehq/sonde/pkg/guard"
)

// bounds lists the columns one SELECT bounds from below: each top-level AND
// conjunct of its WHERE and of every ON that compares a column itself with
// a value from below. A bound from an outer join's ON carries the refs of
// the tables it limits. An unqualified column counts only when the SELECT reads
// a single source: with several, even a derived table or a CTE, it could be
// another source's column, so the bound must be qualified. A bound whose
// value limits nothing (NULL, a date at or before guard.BoundFloor, a value
// the reader does not evaluate) is marked Vacuous.
func bounds(sc *scope) []guard.Bound {
	var out []guard.Bound
	now := time.Now()
	for _, c := range sc.conds {
		for _, n := range conjuncts(c.n, nil) {
			col, vals, ok := lowerBound(n, false)
			if !ok || col.qual == "" && sc.sources > 1 {
				continue
			}
			b := guard.Bound{Qualifier: col.qual, Column: col.name, Limits: c.limits}
			for _, v := range vals {
				if why := v.bv.Vacuous(now); why != "" {
					b.Vacuous = why
					break
				}
			}
			out = append(out, b)
		}
	}
	return out
}

func conjuncts(n *node, out []*node) []*node {
	if n.op == "and" {
		for _, k := range n.kids {
			out = conjuncts(k, out)
		}
		return out
	}
	return append(out, n)
}

// lowerBound reports the column n bounds from below: col >= v, col > v,
// col = v, col !< v (or the mirror, v <= col), col BETWEEN v AND v, col IN
// (v, …), and NOT of an upper bound, and the values it compares the column
// with. negated says n stands under a NOT.
func lowerBound(n *node, negated bool) (*node, []*node, bool) {
	switch n.op {
	case "not":
		return lowerBound(n.kids[0], !negated)
	case "cmp":
		op := n.cmp
		if negated {
			op = complement[op]
		}
		l, r := n.kids[0], n.kids[1]
		switch {
		case l.op == "col" && r.konst && fromBelow[op]:
			return l, []*node{r}, true
		case r.op == "col" && l.konst && fromBelow[mirror[op]]:
			return r, []*node{l}, true
		}
	case "between":
		if !negated && !n.neg && n.kids[0].op == "col" && n.kids[1].konst && n.kids[2].konst {
			return n.kids[0], n.kids[1:2], true
		}
	case "in":
		if !negated && !n.neg && n.kids[0].op == "col" && len(n.kids) > 1 && allKonst(n.kids[1:]...) {
			return n.kids[0], n.kids[1:], true
		}
	}
	return nil, nil, false
}

// fromBelow are the operators that bound their left side from below.
var fromBelow = set(`>= > = !<`)

// mirror is the operator with its sides swapped: v <= col is col >= v.
var mirror = map[string]string{">=": "<=", "<=": ">=", ">": "<", "<": ">", "=": "=", "<>": "<>", "!=": "!=", "!<": "!>", "!>": "!<"}

// complement is the operator NOT turns it into: NOT (col < v) is col >= v.
var complement = map[string]string{"<": ">=", "<=": ">", ">": "<=", ">=": "<", "!<": "<", "!>": ">", "=": "<>", "<>": "=", "!=": "="}
