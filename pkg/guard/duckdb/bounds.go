package duckdb

import (
	"strconv"
	"strings"
	"time"

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
				if n := len(out); n > 0 && out[n-1].Vacuous == "" {
					for _, v := range children[2:] {
						if why := boundValue(obj(v)).Vacuous(time.Now()); why != "" {
							out[n-1].Vacuous = why
							break
						}
					}
				}
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
	b := guard.Bound{Vacuous: boundValue(val).Vacuous(time.Now())}
	switch len(parts) {
	case 0:
		return out
	case 1:
		b.Column = parts[0]
	default:
		b.Qualifier, b.Column = parts[len(parts)-2], parts[len(parts)-1]
	}
	return append(out, b)
}

// intervalFunctions build an interval of a number of units.
var intervalFunctions = map[string]string{
	"to_millennia": "1000 years", "to_centuries": "100 years", "to_decades": "10 years", "to_years": "1 year",
	"to_quarters": "3 months", "to_months": "1 month", "to_weeks": "1 week", "to_days": "1 day",
	"to_hours": "1 hour", "to_minutes": "1 minute", "to_seconds": "1 second",
}

// dvalue is a constant reduced: a bound's value, or an interval.
type dvalue struct {
	bv       guard.BoundValue
	interval time.Duration
	isIntvl  bool
}

// boundValue reduces the value a bound compares its column with to what
// decides whether it limits anything: literals (through casts), the current
// time, the current time minus an interval, date_trunc of it, make_date of
// numbers, parameters. Anything else is guard.BoundUnknown.
func boundValue(n node) guard.BoundValue {
	v := reduce(n, 0)
	if v.isIntvl {
		return guard.BoundValue{}
	}
	return v.bv
}

func reduce(n node, depth int) dvalue {
	if n == nil || depth > 32 {
		return dvalue{}
	}
	switch str(n, "class") {
	case "PARAMETER":
		return dvalue{bv: guard.BoundValue{Kind: guard.BoundParam}}
	case "CONSTANT":
		val := obj(n["value"])
		if val == nil || val["is_null"] == true {
			return dvalue{bv: guard.BoundValue{Kind: guard.BoundNull}}
		}
		if s, ok := constString(n); ok {
			return dvalue{bv: guard.BoundValue{Kind: guard.BoundString, Text: s}}
		}
		if f, ok := constNumber(n); ok {
			return dvalue{bv: guard.BoundValue{Kind: guard.BoundNumber, Number: f}}
		}
	case "COLUMN_REF":
		if isValue(n) { // current_date and its kin
			return dvalue{bv: guard.BoundValue{Kind: guard.BoundNow}}
		}
	case "CAST":
		inner := reduce(obj(n["child"]), depth+1)
		if str(obj(n["cast_type"]), "id") == "INTERVAL" && inner.bv.Kind == guard.BoundString {
			if d, ok := guard.ParseInterval(inner.bv.Text); ok {
				return dvalue{interval: d, isIntvl: true}
			}
			return dvalue{}
		}
		return inner
	case "FUNCTION":
		if str(n, "schema") != "" || str(n, "catalog") != "" {
			return dvalue{}
		}
		name := strings.ToLower(str(n, "function_name"))
		children, _ := n["children"].([]any)
		var args []dvalue
		for _, c := range children {
			args = append(args, reduce(obj(c), depth+1))
		}
		switch {
		case (name == "now" || name == "get_current_timestamp" || name == "current_date" || name == "today" || name == "current_timestamp") && len(args) == 0:
			return dvalue{bv: guard.BoundValue{Kind: guard.BoundNow}}
		case name == "trunc" && len(args) == 1:
			return args[0]
		case intervalFunctions[name] != "" && len(args) == 1 && args[0].bv.Kind == guard.BoundNumber:
			d, _ := guard.ParseInterval(intervalFunctions[name])
			return dvalue{interval: time.Duration(float64(d) * args[0].bv.Number), isIntvl: true}
		case (name == "date_trunc" || name == "datetrunc") && len(args) == 2 && args[0].bv.Kind == guard.BoundString && args[1].bv.Kind == guard.BoundNow:
			d, _ := guard.ParseInterval("1 " + args[0].bv.Text)
			return dvalue{bv: args[1].bv.Behind(d)}
		case (name == "make_date" || name == "make_timestamp") && len(args) >= 3:
			var ymd []string
			for i, w := range []int{4, 2, 2} {
				if args[i].bv.Kind != guard.BoundNumber {
					return dvalue{}
				}
				s := strconv.FormatFloat(args[i].bv.Number, 'f', 0, 64)
				for len(s) < w {
					s = "0" + s
				}
				ymd = append(ymd, s)
			}
			return dvalue{bv: guard.BoundValue{Kind: guard.BoundString, Text: strings.Join(ymd, "-")}}
		case name == "-" && len(args) == 1 && args[0].bv.Kind == guard.BoundNumber:
			return dvalue{bv: guard.BoundValue{Kind: guard.BoundNumber, Number: -args[0].bv.Number}}
		case (name == "-" || name == "+" || name == "*") && len(args) == 2:
			return arith(name, args[0], args[1])
		}
	}
	return dvalue{}
}

// arith folds numbers and moves the current time by an interval or (for a
// date) a number of days.
func arith(op string, l, r dvalue) dvalue {
	switch {
	case l.bv.Kind == guard.BoundNull || r.bv.Kind == guard.BoundNull:
		return dvalue{bv: guard.BoundValue{Kind: guard.BoundNull}}
	case l.bv.Kind == guard.BoundNumber && r.bv.Kind == guard.BoundNumber:
		a, b := l.bv.Number, r.bv.Number
		f := map[string]float64{"+": a + b, "-": a - b, "*": a * b}[op]
		return dvalue{bv: guard.BoundValue{Kind: guard.BoundNumber, Number: f}}
	case l.isIntvl && r.bv.Kind == guard.BoundNumber && op == "*":
		return dvalue{interval: time.Duration(float64(l.interval) * r.bv.Number), isIntvl: true}
	case r.isIntvl && l.bv.Kind == guard.BoundNumber && op == "*":
		return dvalue{interval: time.Duration(float64(r.interval) * l.bv.Number), isIntvl: true}
	case l.bv.Kind == guard.BoundNow && r.isIntvl && op != "*":
		d := r.interval
		if op == "+" {
			d = -d
		}
		return dvalue{bv: l.bv.Behind(d)}
	case r.bv.Kind == guard.BoundNow && l.isIntvl && op == "+":
		return dvalue{bv: r.bv.Behind(-l.interval)}
	case l.bv.Kind == guard.BoundNow && r.bv.Kind == guard.BoundNumber && op != "*":
		d, _ := guard.ParseInterval(strconv.FormatFloat(r.bv.Number, 'f', -1, 64) + " days")
		if op == "+" {
			d = -d
		}
		return dvalue{bv: l.bv.Behind(d)}
	}
	return dvalue{}
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
