package exectext

import (
	"fmt"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
)

// rows renders a read's result: a line the server writes (size,
// truncation, how to cite it), then the rows fenced, a header of column
// names and one line per row, values joined by " | ". Within show bytes
// (zero: no bound) it keeps whole rows, the first in the result's order,
// and says how many it shows of how many: the artifact holds them all.
func rows(connID string, sum contracts.ArtifactSummary, cells [][]string, show int) string {
	head := columnLine(sum.Columns)
	return fit(show, rowLines(cells), func(kept []string, c *cut) string {
		var b strings.Builder
		fmt.Fprintf(&b, "Result of the read on connection %s: %s, %s", connID, plural(sum.Rows, "row"), plural(len(sum.Columns), "column"))
		if sum.Truncated {
			fmt.Fprintf(&b, " (truncated by %s: the statement returned more)", strings.Join(sum.TruncatedBy, ", "))
		}
		fmt.Fprintf(&b, ". Cite it as %s.\n", evidence(sum.CorrelationID))
		b.WriteString(c.sentence("rows", "result", sum.CorrelationID, "aggregate or narrow the statement to see the rest"))
		b.WriteString(fence.Wrap("rows read from connection "+connID, head+strings.Join(kept, "")))
		return b.String()
	})
}

// cut says what a rendering held back to stay within its bound: it shows
// the first n of total lines, shown of all bytes of them.
type cut struct{ n, total, shown, all int }

// sentence is the server's line for a cut rendering of what (rows, plan
// lines), stored whole as a thing citable as cid; "" when nothing was cut.
func (c *cut) sentence(what, thing, cid, fix string) string {
	if c == nil {
		return ""
	}
	s := fmt.Sprintf("Showing %d of %d %s (%d of %d bytes), the first in order, so that it fits the model's context; the whole %s is stored and citable as %s; %s.\n",
		c.n, c.total, what, c.shown, c.all, thing, cid, fix)
	if c.n == 0 && c.total > 0 {
		s += "Even the first line alone is too long to show: read fewer or shorter columns (substr, length) or aggregate.\n"
	}
	return s
}

// fit renders lines (each ending in a line break) whole when the text fits
// in show bytes or show is zero; otherwise the longest run of whole lines
// from the first whose text fits, with the cut said. render writes the text
// from the lines it is given (and the cut, nil when none).
func fit(show int, lines []string, render func(kept []string, c *cut) string) string {
	full := render(lines, nil)
	if show <= 0 || len(full) <= show {
		return full
	}
	sums := make([]int, len(lines)+1) // bytes of the first k lines
	for i, l := range lines {
		sums[i+1] = sums[i] + len(l)
	}
	at := func(k int) string {
		return render(lines[:k], &cut{n: k, total: len(lines), shown: sums[k], all: sums[len(lines)]})
	}
	// A k whose text fits, found by halving: the text grows with k (a
	// fence rewrite across lines may shrink it a little, so the k found
	// may fall short of the largest by a line or two, never over the bound).
	lo, hi := 0, len(lines)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if len(at(mid)) <= show {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return at(lo)
}

// columnLine is a result's header: its column names, separated by " | ".
func columnLine(cols []contracts.Column) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteString(" | ")
		}
		b.WriteString(Line(c.Name))
	}
	b.WriteByte('\n')
	return b.String()
}

// rowLines writes one line per row, its cells joined by " | ".
func rowLines(cells [][]string) []string {
	out := make([]string, len(cells))
	for r, row := range cells {
		out[r] = strings.Join(row, " | ") + "\n"
	}
	return out
}

// plan renders an estimating plan: a line the server writes (that it was
// not run, how to cite it), then, fenced — relation and index names are the
// database's — the summary (access per relation, the engine's estimates,
// steps not interpreted) and the plan as the engine wrote it (cells, one
// row a line). Within show bytes (zero: no bound) the plan keeps its first
// whole lines and says how many it shows; the summary is always shown.
func plan(connID string, sum contracts.ArtifactSummary, cells [][]string, p *contracts.PlanSummary, show int) string {
	var body strings.Builder
	if p.HypotheticalIndex != "" {
		fmt.Fprintf(&body, "Planned as if this index existed (hypothetical: nothing was created): %s\n", Line(p.HypotheticalIndex))
	}
	body.WriteString("Summary:\n")
	for _, a := range p.Access {
		fmt.Fprintf(&body, "- %s: %s", Line(a.Relation), a.Access)
		if a.Index != "" {
			fmt.Fprintf(&body, " (%s)", Line(a.Index))
		}
		if a.Rows != nil {
			fmt.Fprintf(&body, ", ~%.0f rows (estimate)", *a.Rows)
		}
		body.WriteByte('\n')
	}
	if len(p.Access) == 0 {
		body.WriteString("- no relation is read\n")
	}
	if p.Cost != nil {
		fmt.Fprintf(&body, "Estimated cost: %g (the engine's units)\n", *p.Cost)
	}
	if p.Rows != nil {
		fmt.Fprintf(&body, "Estimated rows returned: %.0f\n", *p.Rows)
	}
	if p.Note != "" {
		body.WriteString(p.Note + "\n")
	}
	if len(p.Uninterpreted) > 0 {
		fmt.Fprintf(&body, "Steps the summary does not interpret (see the plan): %s\n", Line(strings.Join(p.Uninterpreted, ", ")))
	}
	body.WriteString("Plan:\n")
	summary := body.String()
	return fit(show, rowLines(cells), func(kept []string, c *cut) string {
		var b strings.Builder
		fmt.Fprintf(&b, "Estimating plan on connection %s (the statement was not run). Cite it as %s.\n", connID, evidence(sum.CorrelationID))
		b.WriteString(c.sentence("plan lines", "plan", sum.CorrelationID, "the summary covers every relation the plan reads; plan a narrower statement to see its whole plan"))
		b.WriteString(fence.Wrap("plan read from connection "+connID, summary+strings.Join(kept, "")))
		return b.String()
	})
}
