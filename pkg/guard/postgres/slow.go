package postgres

import (
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"github.com/sondehq/sonde/contracts"
)

// Built-ins that run without PostgreSQL's interrupt checks for a time that
// grows with the product of their operands' lengths (issue 17, item 4).
// Measured on PostgreSQL 15.18 under a 1 s statement_timeout:
//
//	repeat('a', 300000) LIKE '%' || repeat('a', 10000) || 'b%'      6.4 s (ILIKE 5.7 s)
//	strpos(repeat('a', 1000000), 'b' || repeat('a', 5000))           4.1 s
//	replace(…the same…), split_part(…), string_to_array(…)           5.4, 5.2, 2.5 s
//	array of 40,000 && another of 40,000 (no element in common)      7.8 s
//	xpath('count(//a[. = //b])', …20,000 nodes…)                     20.6 s
//
// while regular expressions (~, regexp_*, SIMILAR TO), jsonpath and numeric
// arithmetic stopped within 0.3 s of the timeout: PostgreSQL checks for
// interrupts inside them. XML is refused whole (xmlRule, nodes.go). The
// others are refused only on values the query builds — an operand holding
// anything but columns, constants and parameters, their casts, ||,
// COALESCE, NULLIF and the functions in sizeKeeping — since a stored value's
// length is the data's, not the query's. A column of a subquery or CTE may
// be built itself, so an operation on columns is refused too when the
// statement both reads from a subquery, CTE or function and calls a
// function in growing (or recurses, or builds an ARRAY(SELECT …)).
var slowOperators = setOf("~~", "~~*", "!~~", "!~~*", "&&", "@>", "<@")

// slowFunctions are the functions of that kind, with how many of their
// first arguments are compared.
var slowFunctions = map[string]int{"strpos": 2, "position": 2, "replace": 2, "split_part": 2,
	"string_to_array": 2, "string_to_table": 2, "translate": 2}

// sizeKeeping are the functions whose result is no longer than their
// arguments together: an operand built of these from plain values is plain.
var sizeKeeping = setOf("lower", "upper", "btrim", "ltrim", "rtrim", "trim", "substr", "substring", "left",
	"right", "initcap", "md5", "like_escape", "normalize", "concat", "concat_ws", "text", "varchar")

// growing are the functions that build a value longer than their
// arguments, or one from many rows.
var growing = setOf("repeat", "lpad", "rpad", "string_agg", "array_agg", "json_agg", "jsonb_agg",
	"json_agg_strict", "jsonb_agg_strict", "json_object_agg", "jsonb_object_agg", "array_fill", "format",
	"overlay", "replace", "regexp_replace", "translate", "concat", "concat_ws", "array_cat", "array_append",
	"array_prepend", "array_to_string", "encode", "string_to_array", "regexp_split_to_array", "generate_series")

// plainOperand reports whether n holds only stored or written values, and
// whether it holds a column.
func plainOperand(n *pg_query.Node) (plain, column bool) {
	switch x := n.GetNode().(type) {
	case nil:
		return true, false
	case *pg_query.Node_ColumnRef:
		return true, true
	case *pg_query.Node_ParamRef, *pg_query.Node_AConst:
		return true, false
	case *pg_query.Node_TypeCast:
		return plainOperand(x.TypeCast.Arg)
	case *pg_query.Node_CollateClause:
		return plainOperand(x.CollateClause.Arg)
	case *pg_query.Node_AExpr:
		e := x.AExpr
		ns, _ := names(e.Name)
		if e.Kind == pg_query.A_Expr_Kind_AEXPR_NULLIF || e.Kind == pg_query.A_Expr_Kind_AEXPR_OP && len(ns) > 0 && ns[len(ns)-1] == "||" {
			return plainAll([]*pg_query.Node{e.Lexpr, e.Rexpr})
		}
	case *pg_query.Node_CoalesceExpr:
		return plainAll(x.CoalesceExpr.Args)
	case *pg_query.Node_AArrayExpr:
		return plainAll(x.AArrayExpr.Elements)
	case *pg_query.Node_FuncCall:
		f := x.FuncCall
		if ns, ok := names(f.Funcname); ok && len(ns) > 0 && sizeKeeping[ns[len(ns)-1]] && f.Over == nil && !f.AggStar {
			return plainAll(f.Args)
		}
	}
	return false, false
}

func plainAll(ns []*pg_query.Node) (plain, column bool) {
	for _, n := range ns {
		p, c := plainOperand(n)
		if !p {
			return false, false
		}
		column = column || c
	}
	return true, column
}

// slowOperation checks the operands of one of the operations above, named
// what; they are refused when built, remembered when they hold a column.
func (w *walker) slowOperation(what string, operands []*pg_query.Node) {
	plain, column := plainAll(operands)
	if !plain {
		w.refuse(contracts.RefuseFunctionDenied,
			fmt.Sprintf("%s on a value the query builds (repeat, lpad, string_agg, a subquery, …) runs without PostgreSQL's interrupt checks for a time that grows with the product of the lengths: a statement timeout does not stop it", what),
			"apply it to stored columns, constants and parameters (or lower, upper, trim, substr of them), not to values built in the query; a regular expression (~, regexp_like), which PostgreSQL can interrupt, may match a built value")
		return
	}
	if column && w.slowOnColumns == "" {
		w.slowOnColumns = what
	}
}

// slowCheck refuses, once the statement is read, an operation of the kind
// above on columns when those columns may be built in a subquery or CTE.
func (w *walker) slowCheck() {
	if w.slowOnColumns == "" || !w.builds {
		return
	}
	for _, s := range w.scopes {
		if len(s.Derived) > 0 {
			w.refuse(contracts.RefuseFunctionDenied,
				fmt.Sprintf("%s on a column of a subquery or CTE that may build its value (the statement calls repeat, string_agg or a like function, recurses, or builds an ARRAY of a query) runs without PostgreSQL's interrupt checks for a time that grows with the product of the lengths", w.slowOnColumns),
				"apply it to the stored columns of tables, or match with a regular expression (~, regexp_like), which PostgreSQL can interrupt")
			return
		}
	}
}

func slowName(op string) string {
	switch op {
	case "~~", "!~~":
		return "LIKE"
	case "~~*", "!~~*":
		return "ILIKE"
	}
	return "the array comparison " + strings.TrimSpace(op)
}
