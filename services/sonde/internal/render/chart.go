package render

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/chart"
)

// writeChart prints a chart as a text table: the x value, then each
// series' value with a bar scaled to that series' largest magnitude. It
// draws the decision the server recorded with the answer (the series, and
// no bar for a point it dropped) and decides nothing itself; for a run
// recorded before decisions were kept, it says so and takes the decision
// from pkg/chart, the server's own rule.
func writeChart(out io.Writer, indent string, spec *contracts.ChartSpec, decided *contracts.ChartDecision, art contracts.Artifact) {
	if decided == nil {
		d, err := chart.Decide(*spec, art)
		if err != nil {
			var p *contracts.Problem
			code := "refused"
			if errors.As(err, &p) {
				code = string(p.Code)
			}
			fmt.Fprintf(out, "%sthe chart is not drawn (%s): the run recorded no decision, and the server's rule refuses these rows\n", indent, Clip(code, 40))
			return
		}
		fmt.Fprintf(out, "%sthe run recorded no chart decision: drawn by the server's rule (%s) now\n", indent, chart.Rule)
		decided = &d
	}
	index := map[string]int{}
	for i, c := range art.Columns {
		index[c.Name] = i
	}
	xi, ok := index[spec.X]
	if !ok {
		fmt.Fprintf(out, "%sthe result has no column \"%s\"\n", indent, Clip(spec.X, 40))
		return
	}
	type point struct {
		row    int
		column string
	}
	dropped := map[point]bool{}
	for _, p := range decided.Dropped {
		dropped[point{p.Row, p.Column}] = true
	}
	// A scatter row whose x is dropped draws none of its points.
	drawn := func(row int, column string) bool {
		return !dropped[point{row, column}] && !(spec.Type == "scatter" && dropped[point{row, spec.X}])
	}
	series := decided.Series
	if len(series) > maxChartSeries {
		series = series[:maxChartSeries]
	}
	width := max(6, chartBarWidth/max(1, len(series)))
	data := art.Data
	if len(data) > maxChartRows {
		data = data[:maxChartRows]
	}
	header := []string{Clean(spec.X)}
	right := []bool{numericColumn(data, xi)}
	type col struct {
		name string
		i    int
		peak float64
		sum  float64
	}
	var cols []col
	for _, y := range series {
		yi, ok := index[y]
		if !ok {
			fmt.Fprintf(out, "%sthe result has no column \"%s\"\n", indent, Clip(y, 40))
			return
		}
		c := col{name: y, i: yi}
		for r, row := range data {
			if v, ok := chart.Value(at(row, yi)); ok && drawn(r, y) {
				c.peak = math.Max(c.peak, math.Abs(v))
				c.sum += v
			}
		}
		cols = append(cols, c)
		header = append(header, Clean(y), "")
		right = append(right, true, false)
	}
	pie := spec.Type == "pie"
	var rows [][]string
	for r, row := range data {
		cells := []string{valueCell(at(row, xi))}
		for _, c := range cols {
			v, ok := chart.Value(at(row, c.i))
			ok = ok && drawn(r, c.name)
			text := valueCell(at(row, c.i))
			if ok && pie && c.sum > 0 {
				text += fmt.Sprintf(" (%.1f%%)", 100*v/c.sum)
			}
			b := ""
			if ok {
				b = bar(v, c.peak, width)
			}
			cells = append(cells, text, b)
		}
		rows = append(rows, cells)
	}
	writeTable(out, indent, header, rows, right)
	if len(art.Data) > maxChartRows {
		fmt.Fprintf(out, "%s… %d more rows not shown\n", indent, len(art.Data)-maxChartRows)
	}
	if len(decided.Series) > maxChartSeries {
		fmt.Fprintf(out, "%s… %d more series not shown\n", indent, len(decided.Series)-maxChartSeries)
	}
	writeDropped(out, indent, decided.Dropped, art.Data, xi)
}

// writeDropped says which points the decision left out, and why.
func writeDropped(out io.Writer, indent string, dropped []contracts.ChartDrop, data [][]any, xi int) {
	if len(dropped) == 0 {
		return
	}
	var parts []string
	for _, p := range dropped {
		why := "is NULL"
		if p.Why != contracts.ChartDropNull {
			why = "is not a number"
		}
		var x any
		if p.Row >= 0 && p.Row < len(data) {
			x = at(data[p.Row], xi)
		}
		parts = append(parts, valueCell(x)+": "+Clip(p.Column, 40)+" "+why)
	}
	noun := "points"
	if len(dropped) == 1 {
		noun = "point"
	}
	fmt.Fprintf(out, "%snot drawn (%d %s): %s\n", indent, len(dropped), noun, boundedList(parts))
}

// bar draws v against peak in at most width cells, with eighths for the
// remainder; a negative value is drawn shaded.
func bar(v, peak float64, width int) string {
	if peak <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	eighths := int(math.Round(math.Abs(v) / peak * float64(width*8)))
	eighths = min(eighths, width*8)
	if v < 0 {
		return strings.Repeat("▒", (eighths+7)/8)
	}
	s := strings.Repeat("█", eighths/8)
	if r := eighths % 8; r > 0 {
		s += string([]rune("▏▎▍▌▋▊▉")[r-1])
	}
	return s
}
