package render

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// writeTable prints rows under an optional header as aligned columns. Cells
// must already be clean; the widest columns are narrowed (their cells
// clipped with a marker) until a line fits tableWidth.
func writeTable(out io.Writer, indent string, header []string, rows [][]string, right []bool) {
	ncol := len(header)
	for _, r := range rows {
		ncol = max(ncol, len(r))
	}
	if ncol == 0 {
		return
	}
	widths := make([]int, ncol)
	measure := func(r []string) {
		for i, c := range r {
			widths[i] = max(widths[i], min(utf8.RuneCountInString(c), maxCellRunes))
		}
	}
	measure(header)
	for _, r := range rows {
		measure(r)
	}
	for {
		total := 2 * (ncol - 1)
		widest := 0
		for i, w := range widths {
			total += w
			if w > widths[widest] {
				widest = i
			}
		}
		if total <= tableWidth || widths[widest] <= minColumnWidth {
			break
		}
		widths[widest]--
	}
	line := func(r []string) {
		var b strings.Builder
		b.WriteString(indent)
		for i := 0; i < ncol; i++ {
			c := ""
			if i < len(r) {
				c = Cut(r[i], widths[i])
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i < len(right) && right[i] {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
			if i < ncol-1 {
				b.WriteString("  ")
			}
		}
		fmt.Fprintln(out, strings.TrimRight(b.String(), " "))
	}
	if len(header) > 0 {
		line(header)
	}
	for _, r := range rows {
		line(r)
	}
}

// valueCell renders one value of a stored result, clean and bounded.
func valueCell(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case string:
		return Clip(v, maxCellRunes)
	case float64:
		return Number(v)
	case json.Number:
		return Clip(v.String(), maxCellRunes)
	case bool:
		return strconv.FormatBool(v)
	case map[string]any:
		if v["type"] == "blob" {
			if n, ok := v["bytes"].(float64); ok {
				return fmt.Sprintf("<blob %s bytes>", Number(n))
			}
			return "<blob>"
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return Clip(string(b), maxCellRunes)
}

// numeric reads a value as a number: a JSON number or a string that parses
// as one (exact numerics arrive as text).
func numeric(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return 0, false
}

// numericColumn reports whether every non-null value of column j is a
// Number, so the column is right-aligned.
func numericColumn(data [][]any, j int) bool {
	seen := false
	for _, row := range data {
		v := at(row, j)
		if v == nil {
			continue
		}
		if _, ok := numeric(v); !ok {
			return false
		}
		seen = true
	}
	return seen
}

// textType reports whether a declared column type holds text, so digits in
// it (a session id) stay left-aligned.
func textType(t string) bool {
	t = strings.ToLower(t)
	for _, k := range []string{"char", "text", "string", "clob", "uuid", "name"} {
		if strings.Contains(t, k) {
			return true
		}
	}
	return false
}

func at(row []any, i int) any {
	if i < len(row) {
		return row[i]
	}
	return nil
}

// Number prints a figure without exponent where it is of a sensible size.
func Number(f float64) string {
	if math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', 6, 64)
}
