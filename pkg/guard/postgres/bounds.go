package postgres

import (
	"strconv"
	"strings"
	"time"

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
			return valued(column(e.Lexpr))(e.Rexpr)
		case (op == ">" || op == ">=") && constant(e.Lexpr):
			return valued(column(e.Rexpr))(e.Lexpr)
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
				return valued(b, true)(e.Rexpr)
			}
		}
		if boundsRight[op] && e.Lexpr != nil && constant(e.Lexpr) {
			return valued(column(e.Rexpr))(e.Lexpr)
		}
	case pg_query.A_Expr_Kind_AEXPR_BETWEEN, pg_query.A_Expr_Kind_AEXPR_BETWEEN_SYM:
		l := e.Rexpr.GetList()
		if l != nil && len(l.Items) == 2 && constant(l.Items[0]) && constant(l.Items[1]) {
			if e.Kind == pg_query.A_Expr_Kind_AEXPR_BETWEEN_SYM {
				return valued(column(e.Lexpr))(l.Items...)
			}
			return valued(column(e.Lexpr))(l.Items[0])
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
		return valued(column(e.Lexpr))(l.Items...)
	}
	return guard.Bound{}, false
}

// valued marks a bound Vacuous when one of the values it compares its
// column with limits nothing (see guard.BoundValue.Vacuous).
func valued(b guard.Bound, ok bool) func(vals ...*pg_query.Node) (guard.Bound, bool) {
	return func(vals ...*pg_query.Node) (guard.Bound, bool) {
		if !ok {
			return b, false
		}
		now := time.Now()
		for _, v := range vals {
			if why := boundValue(v).Vacuous(now); why != "" {
				b.Vacuous = why
				break
			}
		}
		return b, true
	}
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

// nowFunctions are the functions that give the current date and time.
var nowFunctions = map[string]bool{"now": true, "statement_timestamp": true, "transaction_timestamp": true, "clock_timestamp": true}

// pvalue is a constant reduced: a bound's value, or an interval.
type pvalue struct {
	bv       guard.BoundValue
	interval time.Duration
	isIntvl  bool
}

// boundValue reduces the value a bound compares its column with to what
// decides whether it limits anything: literals (through casts), the current
// time, the current time minus an interval or a number of days,
// date_trunc of it, make_date and make_timestamp of numbers. Anything else
// is BoundUnknown.
func boundValue(n *pg_query.Node) guard.BoundValue {
	v := reduce(n, 0)
	if v.isIntvl {
		return guard.BoundValue{}
	}
	return v.bv
}

func reduce(n *pg_query.Node, depth int) pvalue {
	if n == nil || depth > 32 {
		return pvalue{}
	}
	switch x := n.GetNode().(type) {
	case *pg_query.Node_AConst:
		c := x.AConst
		switch {
		case c.Isnull:
			return pvalue{bv: guard.BoundValue{Kind: guard.BoundNull}}
		case c.GetIval() != nil:
			return pvalue{bv: guard.BoundValue{Kind: guard.BoundNumber, Number: float64(c.GetIval().Ival)}}
		case c.GetFval() != nil:
			f, err := strconv.ParseFloat(c.GetFval().Fval, 64)
			if err != nil {
				return pvalue{}
			}
			return pvalue{bv: guard.BoundValue{Kind: guard.BoundNumber, Number: f}}
		case c.GetSval() != nil:
			return pvalue{bv: guard.BoundValue{Kind: guard.BoundString, Text: c.GetSval().Sval}}
		}
	case *pg_query.Node_ParamRef:
		return pvalue{bv: guard.BoundValue{Kind: guard.BoundParam}}
	case *pg_query.Node_TypeCast:
		inner := reduce(x.TypeCast.Arg, depth+1)
		ns, _ := names(x.TypeCast.TypeName.GetNames())
		if len(ns) > 0 && ns[len(ns)-1] == "interval" && inner.bv.Kind == guard.BoundString {
			if d, ok := guard.ParseInterval(inner.bv.Text); ok {
				return pvalue{interval: d, isIntvl: true}
			}
			return pvalue{}
		}
		return inner
	case *pg_query.Node_SqlvalueFunction:
		return pvalue{bv: guard.BoundValue{Kind: guard.BoundNow}}
	case *pg_query.Node_AExpr:
		e := x.AExpr
		if e.Kind != pg_query.A_Expr_Kind_AEXPR_OP {
			return pvalue{}
		}
		op := opName(e)
		r := reduce(e.Rexpr, depth+1)
		if e.Lexpr == nil {
			if op == "-" && r.bv.Kind == guard.BoundNumber {
				r.bv.Number = -r.bv.Number
				return r
			}
			return pvalue{}
		}
		return arith(op, reduce(e.Lexpr, depth+1), r)
	case *pg_query.Node_FuncCall:
		ns, _ := names(x.FuncCall.Funcname)
		if len(ns) == 0 || len(ns) > 2 || len(ns) == 2 && ns[0] != "pg_catalog" {
			return pvalue{}
		}
		name := ns[len(ns)-1]
		var args []pvalue
		for _, a := range x.FuncCall.Args {
			args = append(args, reduce(a, depth+1))
		}
		switch {
		case nowFunctions[name] && len(args) == 0:
			return pvalue{bv: guard.BoundValue{Kind: guard.BoundNow}}
		case name == "date_trunc" && len(args) >= 2 && args[0].bv.Kind == guard.BoundString && args[1].bv.Kind == guard.BoundNow:
			d, _ := guard.ParseInterval("1 " + args[0].bv.Text)
			return pvalue{bv: args[1].bv.Behind(d)}
		case (name == "make_date" || name == "make_timestamp" || name == "make_timestamptz") && len(args) >= 3:
			var ymd [3]float64
			for i := range ymd {
				if args[i].bv.Kind != guard.BoundNumber {
					return pvalue{}
				}
				ymd[i] = args[i].bv.Number
			}
			return pvalue{bv: guard.BoundValue{Kind: guard.BoundString, Text: datestr(ymd)}}
		case (name == "to_date" || name == "to_timestamp") && len(args) == 2:
			return args[0]
		}
	}
	return pvalue{}
}

// arith folds numbers and moves the current time by an interval or (for a
// date) a number of days.
func arith(op string, l, r pvalue) pvalue {
	switch {
	case l.bv.Kind == guard.BoundNull || r.bv.Kind == guard.BoundNull:
		return pvalue{bv: guard.BoundValue{Kind: guard.BoundNull}}
	case l.bv.Kind == guard.BoundNumber && r.bv.Kind == guard.BoundNumber && !l.isIntvl && !r.isIntvl:
		a, b := l.bv.Number, r.bv.Number
		switch op {
		case "+":
			return pvalue{bv: guard.BoundValue{Kind: guard.BoundNumber, Number: a + b}}
		case "-":
			return pvalue{bv: guard.BoundValue{Kind: guard.BoundNumber, Number: a - b}}
		case "*":
			return pvalue{bv: guard.BoundValue{Kind: guard.BoundNumber, Number: a * b}}
		}
	case l.isIntvl && r.bv.Kind == guard.BoundNumber && op == "*":
		return pvalue{interval: time.Duration(float64(l.interval) * r.bv.Number), isIntvl: true}
	case r.isIntvl && l.bv.Kind == guard.BoundNumber && op == "*":
		return pvalue{interval: time.Duration(float64(r.interval) * l.bv.Number), isIntvl: true}
	case l.bv.Kind == guard.BoundNow && r.isIntvl && (op == "-" || op == "+"):
		d := r.interval
		if op == "+" {
			d = -d
		}
		return pvalue{bv: l.bv.Behind(d)}
	case r.bv.Kind == guard.BoundNow && l.isIntvl && op == "+":
		return pvalue{bv: r.bv.Behind(-l.interval)}
	case l.bv.Kind == guard.BoundNow && r.bv.Kind == guard.BoundNumber && (op == "-" || op == "+"):
		d, _ := guard.ParseInterval(strconv.FormatFloat(r.bv.Number, 'f', -1, 64) + " days")
		if op == "+" {
			d = -d
		}
		return pvalue{bv: l.bv.Behind(d)}
	}
	return pvalue{}
}

func datestr(ymd [3]float64) string {
	return strings.Join([]string{pad(ymd[0], 4), pad(ymd[1], 2), pad(ymd[2], 2)}, "-")
}

func pad(f float64, w int) string {
	s := strconv.FormatFloat(f, 'f', 0, 64)
	for len(s) < w {
		s = "0" + s
	}
	return s
}
