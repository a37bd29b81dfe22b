package postgres

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"github.com/sondehq/sonde/pkg/guard"
)

// bounds returns the columns that the top-level AND conjuncts of cond bound
// from below against a value: col >= v, col > v, col = v, v <= col, v < col,
// col BETWEEN v AND w, col IN (v, …) and NOT (col < v). A bound under an OR,
// on a function of the column, or against anything holding a column or a
// subquery does not count; neither does an upper bound alone.
func bounds(cond *pg_query.Node) []guard.Bound {
	var out []guard.Bound
	for _, c := range conjuncts(cond, nil) {
		if b, ok := bound(c); ok {
			out = append(out, b)
		}
	}
	return out
}

func conjuncts(n *pg_query.Node, out []*pg_query.Node) []*pg_query.Node {
	if n == nil {
		return out
	}
	if b := n.GetBoolExpr(); b != nil && b.Boolop == pg_query.BoolExprType_AND_EXPR {
		for _, a := range b.Args {
			out = conjuncts(a, out)
		}
		return out
	}
	return append(out, n)
}

// lower and upper are the comparison operators that bound their left side
// from below, and those that bound their right side from below.
var (
	boundsLeft  = map[string]bool{">=": true, ">": true, "=": true}
	boundsRight = map[string]bool{"<=": true, "<": true, "=": true}
)

func bound(n *pg_query.Node) (guard.Bound, bool) {
	if b := n.GetBoolExpr(); b != nil {
		// NOT (col < v), NOT (col <= v), NOT (v > col), NOT (v >= col).
		if b.Boolop != pg_query.BoolExprType_NOT_EXPR || len(b.Args) != 1 {
			return guard.Bound{}, false
		}
		e := b.Args[0].GetAExpr()
		if e == nil || e.Kind != pg_query.A_Expr_Kind_AEXPR_OP {
			return guard.Bound{}, false
		}
		switch op := opName(e); {
		case (op == "<" || op == "<=") && constant(e.Rexpr):
			return column(e.Lexpr)
		case (op == ">" || op == ">=") && constant(e.Lexpr):
			return column(e.Rexpr)
		}
		return guard.Bound{}, false
	}
	e := n.GetAExpr()
	if e == nil {
		return guard.Bound{}, false
	}
	switch e.Kind {
	case pg_query.A_Expr_Kind_AEXPR_OP:
		op := opName(e)
		if boundsLeft[op] && e.Lexpr != nil && constant(e.Rexpr) {
			if b, ok := column(e.Lexpr); ok {
				return b, true
			}
		}
		if boundsRight[op] && e.Lexpr != nil && constant(e.Lexpr) {
			return column(e.Rexpr)
		}
	case pg_query.A_Expr_Kind_AEXPR_BETWEEN, pg_query.A_Expr_Kind_AEXPR_BETWEEN_SYM:
		l := e.Rexpr.GetList()
		if l != nil && len(l.Items) == 2 && constant(l.Items[0]) && constant(l.Items[1]) {
			return column(e.Lexpr)
		}
	case pg_query.A_Expr_Kind_AEXPR_IN:
		l := e.Rexpr.GetList()
		if opName(e) != "=" || l == nil || len(l.Items) == 0 {
			return guard.Bound{}, false
		}
		for _, it := range l.Items {
			if !constant(it) {
				return guard.Bound{}, false
			}
		}
		return column(e.Lexpr)
	}
	return guard.Bound{}, false
}

// opName is an operator's name, pg_catalog's qualification dropped.
func opName(e *pg_query.A_Expr) string {
	ns, ok := names(e.Name)
	if !ok || len(ns) == 0 || len(ns) > 2 || len(ns) == 2 && ns[0] != "pg_catalog" {
		return ""
	}
	return ns[len(ns)-1]
}

// column reads a column reference: col, t.col or schema.t.col.
func column(n *pg_query.Node) (guard.Bound, bool) {
	c := n.GetColumnRef()
	if c == nil {
		return guard.Bound{}, false
	}
	ns, ok := names(c.Fields)
	if !ok || len(ns) == 0 || len(ns) > 4 {
		return guard.Bound{}, false
	}
	b := guard.Bound{Column: ns[len(ns)-1]}
	if len(ns) > 1 {
		b.Qualifier = ns[len(ns)-2]
	}
	return b, true
}

// constant reports whether n is a value: a literal, a cast of one, a
// current_date-like value, or an operator or plain function over values.
func constant(n *pg_query.Node) bool {
	switch x := n.GetNode().(type) {
	case *pg_query.Node_AConst:
		return true
	case *pg_query.Node_TypeCast:
		return constant(x.TypeCast.Arg)
	case *pg_query.Node_SqlvalueFunction:
		return true
	case *pg_query.Node_AExpr:
		e := x.AExpr
		return e.Kind == pg_query.A_Expr_Kind_AEXPR_OP && (e.Lexpr == nil || constant(e.Lexpr)) && constant(e.Rexpr)
	case *pg_query.Node_FuncCall:
		f := x.FuncCall
		if f.Over != nil || f.AggStar || f.AggFilter != nil || len(f.AggOrder) > 0 || f.AggDistinct {
			return false
		}
		for _, a := range f.Args {
			if !constant(a) {
				return false
			}
		}
		return true
	}
	return false
}
