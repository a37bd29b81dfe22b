// Package chart holds the one decision of how a presented chart is drawn
// over a result's rows. The server decides once, when the answer is
// presented, and records the decision with it; the console and the CLI
// draw what was recorded and apply no rule of their own.
package chart

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
)

// Rule is the version of the decision Decide takes.
const Rule = "chart.1"

// Decide decides how spec is drawn over art's rows. A chart the rows
// cannot carry is refused with a *contracts.Problem (one of the
// RefuseChart… codes, in the words the model reads): a type outside
// contracts.ChartTypes, no y column, a column the result lacks, fewer than
// two rows, a pie of several series, a scatter over a non-numeric x, or a y
// column not numeric (more than 80 % of its non-null values must read as
// numbers). Otherwise every y column is drawn, and each point whose value
// is not a finite decimal number is recorded as dropped, with why.
func Decide(spec contracts.ChartSpec, art contracts.Artifact) (contracts.ChartDecision, error) {
	cols := map[string]int{}
	var names []string
	for i, col := range art.Columns {
		cols[col.Name] = i
		names = append(names, col.Name)
	}
	realNames := "The result's columns are:\n" + fence.Wrap("result columns", strings.Join(quoteEach(names), ", "))
	if !slices.Contains(contracts.ChartTypes, spec.Type) {
		return refuse(contracts.RefuseChartShapeMismatch, fmt.Sprintf("%s is not a chart type", fence.Quote(spec.Type)),
			"use one of "+strings.Join(contracts.ChartTypes, ", ")+`, or {"kind":"table"}`)
	}
	if len(spec.Y) == 0 {
		return refuse(contracts.RefuseChartShapeMismatch, "the chart names no y column", "name at least one numeric column in y, or present a table")
	}
	for _, n := range append([]string{spec.X}, spec.Y...) {
		if _, ok := cols[n]; !ok {
			return refuse(contracts.RefuseChartColumnNotInResult, fmt.Sprintf("%s is not a column of this result", fence.Quote(n)),
				realNames+"\nName columns exactly as the result does, or present a table.")
		}
	}
	if len(art.Data) < 2 {
		return refuse(contracts.RefuseChartTooFewRows, fmt.Sprintf("the result has %s; a chart needs at least two", plural(len(art.Data), "row")),
			`present it as a table: {"kind":"table","spec":null} (a single number or one row is a table answer)`)
	}
	if spec.Type == "pie" && len(spec.Y) > 1 {
		return refuse(contracts.RefuseChartShapeMismatch, "a pie shows one y column", "name one y column, or use a bar chart for several")
	}
	if spec.Type == "scatter" && !numericColumn(art.Data, cols[spec.X]) {
		return refuse(contracts.RefuseChartShapeMismatch, fmt.Sprintf("a scatter needs a numeric x, and %s is not", fence.Quote(spec.X)), "use a bar or line chart for a category axis")
	}
	for _, n := range spec.Y {
		if !numericColumn(art.Data, cols[n]) {
			return refuse(contracts.RefuseChartColumnNotNumeric,
				fmt.Sprintf("%s does not hold numbers (more than 80%% of its values must)", fence.Quote(n)),
				"chart a numeric column, or present a table: a result with no numeric column is a table answer")
		}
	}
	return drawn(spec, art, cols), nil
}

// drawn is the decision for a chart the rows carry: every series drawn,
// each point that cannot be drawn named. A scatter row whose x is not a
// number is dropped whole, once, under its x column.
func drawn(spec contracts.ChartSpec, art contracts.Artifact, cols map[string]int) contracts.ChartDecision {
	d := contracts.ChartDecision{Rule: Rule, Series: append([]string{}, spec.Y...), Rows: len(art.Data)}
	for r, row := range art.Data {
		if spec.Type == "scatter" {
			if why, ok := undrawable(at(row, cols[spec.X])); ok {
				d.Dropped = append(d.Dropped, contracts.ChartDrop{Row: r, Column: spec.X, Why: why})
				continue
			}
		}
		for _, y := range spec.Y {
			if why, ok := undrawable(at(row, cols[y])); ok {
				d.Dropped = append(d.Dropped, contracts.ChartDrop{Row: r, Column: y, Why: why})
			}
		}
	}
	return d
}

// Value reads v as a point's value: a JSON number, or text holding a
// finite number written in decimal (exact numerics arrive as text). It is
// how the recorded decision reads a value, so a client drawing a point the
// decision keeps reads the same number.
func Value(v any) (float64, bool) {
	var f float64
	switch v := v.(type) {
	case float64:
		f = v
	case int:
		f = float64(v)
	case int64:
		f = float64(v)
	case json.Number:
		n, err := strconv.ParseFloat(v.String(), 64)
		if err != nil {
			return 0, false
		}
		f = n
	case string:
		s := strings.TrimSpace(v)
		if !decimal.MatchString(s) {
			return 0, false
		}
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, false
		}
		f = n
	default:
		return 0, false
	}
	return f, !math.IsNaN(f) && !math.IsInf(f, 0)
}

// decimal is a number written in decimal: what every client's number
// reader takes alike (no hexadecimal, no infinity, no NaN, no separators).
var decimal = regexp.MustCompile(`^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$`)

// undrawable says why v cannot be drawn, if it cannot.
func undrawable(v any) (contracts.ChartDropReason, bool) {
	if v == nil {
		return contracts.ChartDropNull, true
	}
	if _, ok := Value(v); !ok {
		return contracts.ChartDropNotANumber, true
	}
	return "", false
}

// numericColumn: more than 80 % of the column's non-null values read as
// numbers (a number, or text that parses as one). An all-null column is not
// numeric.
func numericColumn(rows [][]any, col int) bool {
	present, numeric := 0, 0
	for _, r := range rows {
		if col >= len(r) || r[col] == nil {
			continue
		}
		present++
		switch v := r[col].(type) {
		case float64, json.Number, int, int64:
			numeric++
		case string:
			if _, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				numeric++
			}
		}
	}
	return present > 0 && numeric*5 > present*4
}

func refuse(code contracts.Code, message, fix string) (contracts.ChartDecision, error) {
	return contracts.ChartDecision{}, &contracts.Problem{Code: code, Message: message, Fix: fix}
}

func at(row []any, i int) any {
	if i < len(row) {
		return row[i]
	}
	return nil
}

func quoteEach(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fence.Quote(n)
	}
	return out
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
