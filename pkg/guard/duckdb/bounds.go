package duckdb

import (
	"strings"

	"github.com/sondehq/sonde/pkg/guard"
)

// bounds lists the columns a condition bounds from below: each top-level AND
// conjunct that holds a column against a value (a constant or a function of
// constants) as col >= v, col > v, v <= col, v < col, col = v,
// col BETWEEN v AND …, or col IN (v, …). DuckDB's parser already folds
// NOT (col < v) into col >= v.
func bounds(cond node) []guard.Bound {
	var out []guard.Bound
	for _, c := range conjuncts(cond) {
		switch str(c, "type") {
		case "COMPARE_GREATERTHAN", "COMPARE_GREATERTHANOREQUALTO":
			out = appendBound(out, obj(c["left"]), obj(c["right"]))
		case "COMPARE_LESSTHAN", "COMPARE_LESSTHANOREQUALTO":
			out = appendBound(out, obj(c["right"]), obj(c["left"]))
		case "COMPARE_EQUAL":
			out = appendBound(out, obj(c["left"]), obj(c["right"]))
			out = appendBound(out, obj(c["right"]), obj(c["left"]))
		case "COMPARE_BETWEEN":
			out = appendBound(out, obj(c["input"]), obj(c["lower"]))
		case "COMPARE_IN":
			children, _ := c["children"].([]any)
			if len(children) < 2 {
				continue
			}
			all := true
			for _, v := range children[1:] {
				all = all && isValue(obj(v))
			}
			if all {
				out = appendBound(out, obj(children[0]), obj(children[1]))
			}
		}
	}
	return out
}

// conjuncts flattens nested ANDs.
func conjuncts(n node) []node {
	if n == nil {
		return nil
	}
	if str(n, "class") == "CONJUNCTION" && str(n, "type") == "CONJUNCTION_AND" {
		var out []node
		children, _ := n["children"].([]any)
		for _, c := range children {
			out = append(out, conjuncts(obj(c))...)
		}
		return out
	}
	return []node{n}
}

func appendBound(out []guard.Bound, col, val node) []guard.Bound {
	if col == nil || val == nil || str(col, "class") != "COLUMN_REF" || !isValue(val) {
		return out
	}
	names, _ := col["column_names"].([]any)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		s, _ := n.(string)
		parts = append(parts, s)
	}
	switch len(parts) {
	case 0:
		return out
	case 1:
		return append(out, guard.Bound{Column: parts[0]})
	default:
		return append(out, guard.Bound{Qualifier: parts[len(parts)-2], Column: parts[len(parts)-1]})
	}
}

// niladic are the SQL keywords DuckDB's parser writes as column references.
var niladic = map[string]bool{
	"current_date": true, "current_timestamp": true, "current_time": true,
	"localtime": true, "localtimestamp": true,
}

// isValue reports whether an expression is a constant or a function of
// constants: no column, no subquery, no window, no aggregate state.
func isValue(n node) bool {
	if n == nil {
		return false
	}
	switch str(n, "class") {
	case "CONSTANT", "PARAMETER":
		return true
	case "COLUMN_REF":
		names, _ := n["column_names"].([]any)
		if len(names) != 1 {
			return false
		}
		s, _ := names[0].(string)
		return niladic[strings.ToLower(s)]
	case "CAST":
		return isValue(obj(n["child"]))
	case "FUNCTION":
		if n["filter"] != nil || aggregates[strings.ToLower(str(n, "function_name"))] {
			return false
		}
		if ob := obj(n["order_bys"]); ob != nil {
			if orders, _ := ob["orders"].([]any); len(orders) > 0 {
				return false
			}
		}
		return allValues(n["children"])
	case "OPERATOR":
		return allValues(n["children"])
	}
	return false
}

func allValues(v any) bool {
	list, _ := v.([]any)
	for _, c := range list {
		if !isValue(obj(c)) {
			return false
		}
	}
	return true
}
