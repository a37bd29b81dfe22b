package duckdb

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// MaxBuiltValue is the largest value a statement may build from a size it
// states: repeat('x', n), lpad, rpad, list_resize, bar, printf widths, range
// as a list. DuckDB's memory_limit does not hold a single value —
// repeat('x', 500000000) took an instance limited to 64 MB past 2 GB — so
// the size is held here, before anything runs.
const MaxBuiltValue = 1 << 20

// maxRepeatOfData is the most times repeat may repeat a value read from the
// database, whose length the reader cannot know.
const maxRepeatOfData = 1024

// sizeFunctions build a value whose size an argument states: the index of
// that argument. The size must be a constant.
var sizeFunctions = map[string]int{
	"repeat": 1, "lpad": 1, "rpad": 1, "list_resize": 1, "array_resize": 1, "bar": 3,
}

// formatFunctions take a format string whose widths and precisions set the
// size of what they build: it must be a constant.
var formatFunctions = set("printf", "format")

// listRanges build a list from constant bounds.
var listRanges = set("range", "generate_series")

// estimate is an upper bound on the bytes an expression builds, beside the
// values it reads from the database, whose length the reader cannot know.
type estimate struct {
	bytes float64
	data  bool // holds a value read from the database (a column, a subquery)
	// units counts the values read from the database it joins (a column
	// once, col || col twice, repeat(col, 10) ten times).
	units float64
	// grown is true when part of it is built from any number of rows: an
	// aggregate that concatenates (string_agg, list, …) or a subquery.
	grown bool
}

// add joins e into sum: the bytes, units and flags of both.
func (sum *estimate) add(e estimate) {
	sum.bytes += e.bytes
	sum.units += e.units
	sum.data = sum.data || e.data
	sum.grown = sum.grown || e.grown
}

// growingAggregates build one value out of every row they aggregate: their
// result is as long as the rows make it.
var growingAggregates = set("string_agg", "group_concat", "listagg", "list", "array_agg", "histogram",
	"histogram_exact", "json_group_array", "json_group_object", "json_group_structure", "bitstring_agg",
	"approx_top_k")

func tooBig(what string, bytes float64) *contracts.Refusal {
	return guard.Refuse(contracts.RefuseResultTooLarge,
		fmt.Sprintf("%s builds a value of about %s, more than the %d bytes a value may be built to here: no result could hold it", what, humanBytes(bytes), MaxBuiltValue),
		fmt.Sprintf("build shorter values (at most %d bytes), or read the length instead (length, octet_length)", MaxBuiltValue))
}

func humanBytes(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MB", b/(1<<20))
	}
	return fmt.Sprintf("%.0f bytes", b)
}

// builtSize bounds the bytes the expression tree n builds, and refuses one
// whose stated sizes pass MaxBuiltValue or that states a size only the data
// knows. Sizes add up through every other function and operator (concat,
// ||, list_value, …), so many small values joined are held too.
func builtSize(v any, depth int) (estimate, *contracts.Refusal) {
	if depth > maxDepth {
		return estimate{}, unsupported("it is nested too deeply")
	}
	switch x := v.(type) {
	case []any:
		var sum estimate
		for _, c := range x {
			e, ref := builtSize(c, depth+1)
			if ref != nil {
				return e, ref
			}
			sum.add(e)
		}
		return sum, nil
	case node:
		return nodeSize(x, depth)
	}
	return estimate{}, nil
}

func nodeSize(n node, depth int) (estimate, *contracts.Refusal) {
	switch str(n, "class") {
	case "CONSTANT":
		if s, ok := constString(n); ok {
			return estimate{bytes: float64(len(s))}, nil
		}
		return estimate{bytes: 16}, nil
	case "COLUMN_REF", "STAR", "PARAMETER":
		// Read from the database or bound by the caller: bounded by what
		// is stored or sent, not built here.
		return estimate{data: true, units: 1}, nil
	case "SUBQUERY":
		// A subquery's own expressions are sized where the walker reaches
		// them; its value may be built from any number of rows.
		return estimate{data: true, units: 1, grown: true}, nil
	case "WINDOW":
		sum, ref := sumChildren(n, depth)
		if growingAggregates[strings.ToLower(str(n, "function_name"))] {
			sum.grown = true
		}
		return sum, ref
	case "FUNCTION":
		name := strings.ToLower(str(n, "function_name"))
		args, _ := n["children"].([]any)
		if i, ok := sizeFunctions[name]; ok {
			return sizedCall(name, args, i, depth)
		}
		if formatFunctions[name] {
			return formatCall(name, args, depth)
		}
		if listRanges[name] {
			if count, ok := rangeCount(args); ok && count*8 > MaxBuiltValue {
				return estimate{}, tooBig(name+"(…) as a list", count*8)
			}
		}
		sum, ref := sumChildren(n, depth)
		if growingAggregates[name] {
			sum.grown = true
		}
		return sum, ref
	}
	return sumChildren(n, depth)
}

// sumChildren sizes a node as the sum of what its children build.
func sumChildren(n node, depth int) (estimate, *contracts.Refusal) {
	var sum estimate
	for k, c := range n {
		if k == "query_location" {
			continue
		}
		switch c.(type) {
		case node, []any:
			e, ref := builtSize(c, depth+1)
			if ref != nil {
				return e, ref
			}
			sum.add(e)
		}
	}
	if sum.bytes > MaxBuiltValue {
		return sum, tooBig("the expression", sum.bytes)
	}
	return sum, nil
}

// sizedCall sizes a call whose argument i states the size it builds.
func sizedCall(name string, args []any, i, depth int) (estimate, *contracts.Refusal) {
	if i >= len(args) {
		if name == "bar" {
			return estimate{bytes: 80 * 4}, nil // bar's default width
		}
		return estimate{}, nil // DuckDB refuses the call itself
	}
	var parts estimate
	for j, a := range args {
		if j == i {
			continue
		}
		e, ref := builtSize(a, depth+1)
		if ref != nil {
			return e, ref
		}
		parts.add(e)
	}
	n, ok := constNumber(obj(args[i]))
	if !ok {
		return estimate{}, guard.Refuse(contracts.RefuseResultTooLarge,
			fmt.Sprintf("the size %s builds to must be a constant: a size the data decides could build a value larger than a read may hold", name),
			fmt.Sprintf("write the size as a number (at most %d), e.g. %s", MaxBuiltValue, map[string]string{
				"repeat": "repeat('-', 20)", "lpad": "lpad(x, 10, '0')", "rpad": "rpad(x, 10)", "bar": "bar(x, 0, 100, 40)",
			}[name]))
	}
	n = math.Max(n, 0)
	var size float64
	switch name {
	case "repeat":
		if parts.data && n > maxRepeatOfData {
			return estimate{}, guard.Refuse(contracts.RefuseResultTooLarge,
				fmt.Sprintf("repeat repeats a value read from the database %.0f times; at most %d times", n, maxRepeatOfData),
				fmt.Sprintf("repeat it at most %d times", maxRepeatOfData))
		}
		size = math.Max(parts.bytes, 1) * n
	case "list_resize", "array_resize":
		size = math.Max(parts.bytes, 16) * n
	default: // lpad, rpad, bar: n characters of up to 4 bytes
		size = 4*n + parts.bytes
	}
	if size > MaxBuiltValue {
		return estimate{}, tooBig(name+"(…)", size)
	}
	units := parts.units
	if name == "repeat" || name == "list_resize" || name == "array_resize" {
		units *= n
	}
	return estimate{bytes: size, data: parts.data, units: units, grown: parts.grown}, nil
}

// formatWidths are the widths and precisions of printf (%08.3f) and of
// format ({:>20}) specifications.
var (
	printfSpec = regexp.MustCompile(`%[-+ #0'<>^=,]*(\*|\d+)?(?:\.(\*|\d+))?`)
	formatSpec = regexp.MustCompile(`\{[^{}]*:[^{}]*\}`)
	digits     = regexp.MustCompile(`\*|\d+`)
)

// formatCall sizes printf and format: the format must be a constant, and its
// widths and precisions small.
func formatCall(name string, args []any, depth int) (estimate, *contracts.Refusal) {
	if len(args) == 0 {
		return estimate{}, nil
	}
	f, ok := constString(obj(args[0]))
	if !ok {
		return estimate{}, guard.Refuse(contracts.RefuseResultTooLarge,
			fmt.Sprintf("the format of %s must be a constant string: a format the data decides could build a value larger than a read may hold", name),
			"write the format as a string literal")
	}
	var specs []string
	if name == "printf" {
		for _, m := range printfSpec.FindAllStringSubmatch(f, -1) {
			specs = append(specs, m[1], m[2])
		}
	} else {
		for _, m := range formatSpec.FindAllString(f, -1) {
			specs = append(specs, digits.FindAllString(m, -1)...)
		}
	}
	size := float64(len(f))
	for _, s := range specs {
		if s == "" {
			continue
		}
		if s == "*" {
			return estimate{}, guard.Refuse(contracts.RefuseResultTooLarge,
				fmt.Sprintf("the format of %s takes a width from an argument (*)", name),
				"write the width into the format as a number")
		}
		w, _ := strconv.ParseFloat(s, 64)
		size += w
	}
	rest, ref := builtSize(args[1:], depth+1)
	if ref != nil {
		return rest, ref
	}
	size += rest.bytes
	if size > MaxBuiltValue {
		return estimate{}, tooBig(name+"(…)", size)
	}
	return estimate{bytes: size, data: rest.data, units: rest.units, grown: rest.grown}, nil
}

// rangeCount is the length of range/generate_series as a list over constant
// integer bounds.
func rangeCount(args []any) (float64, bool) {
	var v []float64
	for _, a := range args {
		n, ok := constNumber(obj(a))
		if !ok {
			return 0, false
		}
		v = append(v, n)
	}
	switch len(v) {
	case 1:
		return v[0], true
	case 2:
		return v[1] - v[0], true
	case 3:
		if v[2] == 0 {
			return 0, false
		}
		return math.Abs((v[1] - v[0]) / v[2]), true
	}
	return 0, false
}

// constNumber reads a numeric constant, through casts and a unary minus.
func constNumber(n node) (float64, bool) {
	switch str(n, "class") {
	case "CONSTANT":
		val := obj(n["value"])
		if val == nil || val["is_null"] == true {
			return 0, false
		}
		switch x := val["value"].(type) {
		case json.Number:
			f, err := x.Float64()
			return f, err == nil
		case float64:
			return x, true
		case string:
			f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
			return f, err == nil
		}
	case "CAST":
		return constNumber(obj(n["child"]))
	case "FUNCTION":
		args, _ := n["children"].([]any)
		if str(n, "function_name") == "-" && len(args) == 1 {
			f, ok := constNumber(obj(args[0]))
			return -f, ok
		}
	}
	return 0, false
}

// constString reads a string constant, through casts.
func constString(n node) (string, bool) {
	switch str(n, "class") {
	case "CONSTANT":
		val := obj(n["value"])
		if s, ok := val["value"].(string); ok && str(obj(val["type"]), "id") == "VARCHAR" {
			return s, true
		}
	case "CAST":
		return constString(obj(n["child"]))
	}
	return "", false
}
