package figures

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
)

// MaxDerivable bounds the shown numbers one claim's figures may be derived
// from, taken in the order shown across its evidence. Past it a shown
// number is still found as itself, and still counts in its column's total
// and average, but enters no sum, difference, ratio or percentage: the work
// of a check is at most MaxDerivable² pairs however large the results, and
// so is the number of values a figure can match by chance.
const MaxDerivable = 64

// Evidence is one thing a claim rests on, as the model was shown it.
type Evidence struct {
	// ID names it in a check's Source: the cited id ("r2", "schema"), or
	// "objective".
	ID string
	// Text is what the model read: a result's content, the schema
	// snapshot's text, a statement, the objective.
	Text string
	// Rows is the result's row count; -1 when it has none.
	Rows int
	// Literal marks a statement the run sent or its objective: figures are
	// found in it as written but never derived from it (they are what the
	// run asked about, not what it read).
	Literal bool
	// How says where a literal figure was found ("in the statement of
	// r2"); empty for a result.
	How string
}

// derived is one value computed from shown ones, with how.
type derived struct {
	value float64
	how   func() string
	src   string
	// rank orders the ways to derive a value, simplest first, so a check
	// says the plainest: a total before a sum, a sum before a ratio.
	rank int
	// share marks a column total, which enters a share (a / total) only.
	share bool
}

// shownSet is what one piece of evidence showed.
type shownSet struct {
	ev      Evidence
	numbers []number
	// sorted are the numbers' magnitudes in order, for lookup.
	sorted []float64
	// dates are the dates shown, by year.
	dates map[int][]Date
	// data are the numbers of the data shown (inside the result's fences):
	// the server's own line ("3 rows, 2 columns") enters no derivation.
	data    []number
	singles []derived
}

// Check checks every figure text states against evidence and returns one
// check per figure, in the order written; skip are ids that are not
// figures (the run's citation ids).
func Check(text string, evidence []Evidence, skip []string) []contracts.FigureCheck {
	figs := Claimed(text, skip)
	if len(figs) == 0 {
		return nil
	}
	sets := make([]shownSet, 0, len(evidence))
	for _, ev := range evidence {
		sets = append(sets, read(ev, skip))
	}
	var pairs []derived // built on the first figure not found as shown
	out := make([]contracts.FigureCheck, 0, len(figs))
	for _, f := range figs {
		c := contracts.FigureCheck{Text: f.Text, Status: contracts.FigureUnverified}
		if src, how, ok := found(f, sets); ok {
			c.Status, c.Source, c.How = contracts.FigureFound, src, how
		} else if f.Date == nil {
			if pairs == nil {
				pairs = derive(sets)
			}
			if d, ok := lookup(f, pairs); ok {
				c.Status, c.Source, c.How = contracts.FigureDerived, d.src, d.how()
			}
		}
		out = append(out, c)
	}
	return out
}

// read scans what ev showed: its numbers and dates, and, for a result, its
// row count and the total, average and median of each numeric column of
// the tables it shows.
func read(ev Evidence, skip []string) shownSet {
	text := shownText(ev.Text)
	s := scan(blank(text, skip), false)
	set := shownSet{ev: ev, numbers: s.numbers, dates: map[int][]Date{}}
	for _, n := range s.numbers {
		set.sorted = append(set.sorted, math.Abs(n.value))
	}
	slices.Sort(set.sorted)
	for _, f := range s.figures {
		if f.Date != nil {
			set.dates[f.Date.Year] = append(set.dates[f.Date.Year], *f.Date)
		}
	}
	if ev.Literal {
		return set
	}
	data := fenced(ev.Text)
	set.data = scan(blank(data, skip), false).numbers
	if ev.Rows >= 0 {
		rows := float64(ev.Rows)
		set.singles = append(set.singles, derived{value: rows, how: func() string { return "the row count of " + ev.ID }, src: ev.ID})
	}
	for _, col := range columns(data) {
		total := 0.0
		for _, v := range col.values {
			total += v
		}
		name, n := col.name, len(col.values)
		set.singles = append(set.singles,
			derived{value: total, how: func() string {
				return "the total of column " + name + " in " + ev.ID + " (" + strconv.Itoa(n) + " rows shown)"
			}, src: ev.ID, share: true},
			derived{value: total / float64(n), how: func() string {
				return "the average of column " + name + " in " + ev.ID + " (" + strconv.Itoa(n) + " rows shown)"
			}, src: ev.ID},
			derived{value: median(col.values), how: func() string {
				return "the median of column " + name + " in " + ev.ID + " (" + strconv.Itoa(n) + " rows shown)"
			}, src: ev.ID})
	}
	return set
}

// median is the middle of values, or the mean of the two middle ones.
func median(values []float64) float64 {
	v := slices.Clone(values)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// fenced is the data a result shows: the bodies of its fences, or, for a
// text that has none, all of it.
func fenced(text string) string {
	var b strings.Builder
	in, any := false, false
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, fence.Open):
			in, any = true, true
		case l == fence.Close:
			in = false
		case in:
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	if !any {
		return shownText(text)
	}
	return b.String()
}

// shownText is the part of a tool result that shows the data: the run's
// status line the server appends ("[turn 3/36 · …]") and the fence
// markers are dropped, so a budget figure is never taken for a reading.
func shownText(text string) string {
	if i := strings.LastIndex(text, "\n[turn "); i >= 0 {
		text = text[:i]
	}
	lines := strings.Split(text, "\n")
	kept := lines[:0]
	for _, l := range lines {
		if strings.HasPrefix(l, fence.Open) || l == fence.Close {
			continue
		}
		kept = append(kept, l)
	}
	return strings.Join(kept, "\n")
}

// column is one numeric column of a table a result showed.
type column struct {
	name   string
	values []float64
}

// columns reads the tables in text — consecutive lines of cells joined by
// " | ", the first line naming them — and returns each column all of whose
// shown cells (NULLs and blanks aside) are numbers, at least two of them.
func columns(text string) []column {
	var out []column
	lines := strings.Split(text, "\n")
	cells := make([][]string, len(lines))
	for i, l := range lines {
		cells[i] = strings.Split(l, " | ")
	}
	for i := 0; i < len(lines); {
		width := len(cells[i])
		j := i + 1
		for width > 1 && j < len(lines) && len(cells[j]) == width {
			j++
		}
		if width > 1 && j-i >= 3 {
			out = append(out, numericColumns(cells[i:j], width)...)
		}
		i = j
	}
	return out
}

func numericColumns(rows [][]string, width int) []column {
	var out []column
	for c := 0; c < width; c++ {
		col := column{name: strings.TrimSpace(rows[0][c])}
		numeric := true
		for _, r := range rows[1:] {
			cell := strings.TrimSpace(r[c])
			if cell == "" || strings.EqualFold(cell, "null") {
				continue
			}
			v, err := strconv.ParseFloat(cell, 64)
			if err != nil {
				numeric = false
				break
			}
			col.values = append(col.values, v)
		}
		if numeric && len(col.values) >= 2 {
			out = append(out, col)
		}
	}
	return out
}

// targets are the values f may stand for: a percentage is also the
// fraction it writes (12% of a shown 0.12).
func targets(f Figure) [][2]float64 {
	t := [][2]float64{{f.Value, f.Half}}
	if f.Percent {
		t = append(t, [2]float64{f.Value / 100, f.Half / 100})
	}
	return t
}

// near reports whether v rounds to target at half's precision (a little
// slack for binary fractions: 0.1+0.2 is 0.3).
func near(v float64, t [2]float64) bool {
	return math.Abs(math.Abs(v)-t[0]) <= t[1]+slack(t[0])
}

// slack is the allowance for binary fractions at x's scale.
func slack(x float64) float64 { return 1e-9 * math.Max(1, x) }

// found looks for f among the values the evidence showed as such.
func found(f Figure, sets []shownSet) (src, how string, ok bool) {
	for _, s := range sets {
		if f.Date != nil || f.Year {
			d := Date{}
			if f.Date != nil {
				d = *f.Date
			} else {
				d.Year = int(f.Value)
			}
			for _, sd := range s.dates[d.Year] {
				if d.within(sd) {
					return s.ev.ID, s.ev.How, true
				}
			}
			if f.Date != nil {
				continue
			}
		}
		for _, t := range targets(f) {
			i, _ := slices.BinarySearch(s.sorted, t[0]-t[1]-slack(t[0]))
			if i < len(s.sorted) && near(s.sorted[i], t) {
				return s.ev.ID, s.ev.How, true
			}
		}
	}
	return "", "", false
}

// derive lists the values derivable from the evidence: each result's row
// count and column totals and averages as they are; then, over the first
// MaxDerivable numbers of the data shown, the sum, difference, ratio,
// percentage and percentage change of every two, and each one's share of
// a column total.
func derive(sets []shownSet) []derived {
	var out, pool, totals []derived
	seen := map[float64]bool{}
	for _, s := range sets {
		out = append(out, s.singles...)
		for _, d := range s.singles {
			if d.share && len(totals) < MaxDerivable {
				totals = append(totals, d)
			}
		}
		for _, n := range s.data {
			if len(pool) < MaxDerivable && !seen[n.value] {
				seen[n.value] = true
				text := n.text
				pool = append(pool, derived{value: n.value, how: func() string { return text }, src: s.ev.ID})
			}
		}
	}
	both := func(a, b derived) string {
		if a.src == b.src {
			return a.src
		}
		return a.src + ", " + b.src
	}
	for i, a := range pool {
		for j, b := range pool {
			if i == j {
				continue
			}
			src := both(a, b)
			if i < j {
				out = append(out,
					derived{value: a.value + b.value, how: func() string { return a.how() + " + " + b.how() }, src: src, rank: 1},
					derived{value: a.value - b.value, how: func() string { return a.how() + " - " + b.how() }, src: src, rank: 2})
			}
			if b.value != 0 {
				out = append(out,
					derived{value: a.value / b.value, how: func() string { return a.how() + " / " + b.how() }, src: src, rank: 3},
					derived{value: a.value / b.value * 100, how: func() string { return a.how() + " / " + b.how() + " * 100" }, src: src, rank: 3},
					derived{value: (a.value - b.value) / b.value * 100, how: func() string { return "(" + a.how() + " - " + b.how() + ") / " + b.how() + " * 100" }, src: src, rank: 4})
			}
		}
		for _, t := range totals {
			if t.value != 0 {
				src := both(a, t)
				out = append(out,
					derived{value: a.value / t.value, how: func() string { return a.how() + " / " + t.how() }, src: src, rank: 3},
					derived{value: a.value / t.value * 100, how: func() string { return a.how() + " / " + t.how() + " * 100" }, src: src, rank: 3})
			}
		}
	}
	for i := range out {
		out[i].value = math.Abs(out[i].value)
	}
	slices.SortStableFunc(out, func(x, y derived) int { return cmpFloat(x.value, y.value) })
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// lookup finds a derived value f rounds to: of those that do, the
// simplest way, then the first listed.
func lookup(f Figure, ds []derived) (derived, bool) {
	best, ok := derived{}, false
	for _, t := range targets(f) {
		lo := t[0] - t[1] - slack(t[0])
		i, _ := slices.BinarySearchFunc(ds, lo, func(d derived, v float64) int { return cmpFloat(d.value, v) })
		for ; i < len(ds) && near(ds[i].value, t); i++ {
			if !ok || ds[i].rank < best.rank {
				best, ok = ds[i], true
			}
		}
		if ok {
			return best, true
		}
	}
	return best, ok
}
