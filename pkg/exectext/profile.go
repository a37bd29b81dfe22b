package exectext

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/grounding"
)

// profile renders a table profile: the server's line (what was counted,
// that it is counts only, how to cite it), then fenced — the names are the
// database's — one line per column, the findings and how to profile the
// columns not covered. Within the request's show bytes it keeps the first
// whole lines of columns and findings and says how many it shows; the
// profile is recorded whole.
func profile(req contracts.ExecRequest, tp *contracts.TableProfile) string {
	var lines []string
	for _, c := range tp.Columns {
		lines = append(lines, fmt.Sprintf("%s | %s | %d | %d | %s | %s | %s\n", grounding.Quote(c.Name), grounding.Quote(c.Type),
			c.Present, tp.Rows-c.Present, countText(c.Distinct, c.NoDistinct), countText(c.EmailLike, ""), countText(c.DigitRun, "")))
	}
	if len(tp.Findings) == 0 {
		lines = append(lines, "Findings: none\n")
	} else {
		lines = append(lines, "Findings (the server's, each a threshold over these counts):\n")
		for _, f := range tp.Findings {
			col := ""
			if f.Column != "" {
				col = " " + grounding.Quote(f.Column)
			}
			lines = append(lines, fmt.Sprintf("- %s%s: %s\n", f.Code, col, f.Detail))
		}
	}
	tail := ""
	if tp.Uncovered > 0 {
		next, _ := json.Marshal(map[string]string{"table": req.Table, "depth": string(tp.Depth), "fromColumn": tp.NextColumn})
		tail = fmt.Sprintf("Not covered: %d more columns; profile them with profile_table %s\n", tp.Uncovered, next)
	}
	return fit(req.ShowBytes, lines, func(kept []string, c *cut) string {
		var b strings.Builder
		fmt.Fprintf(&b, "Profile of a table on connection %s at depth %s: %s", req.ConnectionID, tp.Depth, plural(int(tp.Rows), "row"))
		if tp.Sampled {
			fmt.Fprintf(&b, " counted over the first %d rows the database returned (a large table under the connection's rule: a sample, not the whole table)", tp.SampleRows)
		}
		fmt.Fprintf(&b, ", %s covered. Counts only: no value of the table was read or is shown. Cite it as %s.\n",
			plural(len(tp.Columns), "column"), evidence(req.CorrelationID))
		more := tail
		if c != nil {
			fix := "the findings not shown are in the recorded profile"
			if c.n < len(tp.Columns) {
				// The column's name is the database's: it goes inside the fence.
				fix = "see the columns not shown with the profile_table call the fenced text ends with"
				from, _ := json.Marshal(map[string]string{"table": req.Table, "depth": string(tp.Depth), "fromColumn": tp.Columns[c.n].Name})
				more = "Not shown here: the columns from fromColumn on; profile them with profile_table " + string(from) + "\n"
			}
			b.WriteString(c.sentence("lines of columns and findings", "profile", req.CorrelationID, fix))
		}
		body := fmt.Sprintf("Table: %s\ncolumn | type | present | nulls | distinct | email-like | digit-run\n", grounding.QualifiedName(tp.Table.Schema, tp.Table.Name)) +
			strings.Join(kept, "") + more
		b.WriteString(fence.Wrap("table profile from connection "+req.ConnectionID, body))
		return b.String()
	})
}

// countText writes a count, or "-" when it was not measured (with why).
func countText(n *int64, why string) string {
	switch {
	case n != nil:
		return fmt.Sprint(*n)
	case why != "":
		return "- (" + why + ")"
	}
	return "-"
}
