package demoscript

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/sondehq/sonde/pkg/fence"
)

// table is a result as a tool result renders it: a header line of column
// names joined by " | ", then one line per row.
type table struct {
	columns []string
	rows    [][]string
}

// parseTable reads the first table in a tool result, inside the fence when
// there is one.
func parseTable(content string) table {
	body := content
	if i := strings.Index(body, fence.Open); i >= 0 {
		body = body[i:]
		if nl := strings.IndexByte(body, '\n'); nl >= 0 {
			body = body[nl+1:]
		} else {
			body = ""
		}
		if j := strings.Index(body, fence.Close); j >= 0 {
			body = body[:j]
		}
	}
	var t table
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.Trim(line, "-|+: ") == "" {
			continue
		}
		if t.columns == nil {
			if strings.Contains(line, " | ") {
				t.columns = splitRow(line)
			}
			continue
		}
		if row := splitRow(line); len(row) == len(t.columns) {
			t.rows = append(t.rows, row)
		}
	}
	return t
}

func splitRow(line string) []string {
	cells := strings.Split(line, " | ")
	for i, c := range cells {
		cells[i] = strings.TrimSpace(c)
	}
	return cells
}

func (t table) column(name string) int {
	for i, c := range t.columns {
		if strings.EqualFold(c, name) {
			return i
		}
	}
	return -1
}

// point is one labelled value of a series.
type point struct {
	label string
	value float64
}

// series is a numeric column keyed by a label column, in row order.
type series []point

// series reads column value by label; ok is false when either is missing or
// no row holds a number.
func (t table) series(label, value string) (series, bool) {
	li, vi := t.column(label), t.column(value)
	if li < 0 || vi < 0 {
		return nil, false
	}
	var s series
	for _, r := range t.rows {
		v, err := strconv.ParseFloat(r[vi], 64)
		if err != nil || r[li] == "" {
			continue
		}
		s = append(s, point{label: r[li], value: v})
	}
	return s, len(s) > 0
}

// min returns the smallest value, the earliest on a tie.
func (s series) min() point {
	lo := s[0]
	for _, p := range s[1:] {
		if p.value < lo.value {
			lo = p
		}
	}
	return lo
}

// max returns the largest value, the earliest on a tie.
func (s series) max() point {
	hi := s[0]
	for _, p := range s[1:] {
		if p.value > hi.value {
			hi = p
		}
	}
	return hi
}

func (s series) median() float64 {
	v := make([]float64, len(s))
	for i, p := range s {
		v[i] = p.value
	}
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

func (s series) at(label string) (float64, bool) {
	for _, p := range s {
		if p.label == label {
			return p.value, true
		}
	}
	return 0, false
}

// around names the values either side of label, e.g. ", between 128 in
// 2025-02 and 134 in 2025-04", or "" when label has no neighbour.
func (s series) around(label string, format func(float64) string) string {
	for i, p := range s {
		if p.label != label {
			continue
		}
		switch {
		case i > 0 && i < len(s)-1:
			return fmt.Sprintf(", between %s in %s and %s in %s",
				format(s[i-1].value), s[i-1].label, format(s[i+1].value), s[i+1].label)
		case i > 0:
			return fmt.Sprintf(", after %s in %s", format(s[i-1].value), s[i-1].label)
		case i < len(s)-1:
			return fmt.Sprintf(", before %s in %s", format(s[i+1].value), s[i+1].label)
		}
	}
	return ""
}

// num writes a count: whole numbers without decimals, others with one.
func num(v float64) string {
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// money writes an amount with two decimals and thousands separators.
func money(v float64) string {
	s := strconv.FormatFloat(math.Abs(v), 'f', 2, 64)
	whole, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	if v < 0 {
		b.WriteByte('-')
	}
	for i, r := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String() + "." + frac
}
