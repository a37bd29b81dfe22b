package exectext

import (
	"fmt"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
)

// MomentNotHistory is said with every operational reading.
const MomentNotHistory = "A moment, not a history: this reading says what the engine reported as it was taken."

// reading renders an operational reading: the server's lines (what was
// read, how it was narrowed and bounded, what the engine says about its
// figures, that it is a moment), then the rows fenced — names and
// statements in them are the database's. Within the request's show bytes
// it keeps its first whole rows and says how many it shows; the artifact
// holds them all.
func reading(req contracts.ExecRequest, sum contracts.ArtifactSummary, cells [][]string, rd *contracts.ReadingSummary) string {
	head := columnLine(sum.Columns)
	return fit(req.ShowBytes, rowLines(cells), func(kept []string, c *cut) string {
		var b strings.Builder
		fmt.Fprintf(&b, "Operational reading %s on connection %s: %s, %s. Cite it as %s.\n",
			req.Kind, req.ConnectionID, plural(sum.Rows, "row"), plural(len(sum.Columns), "column"), evidence(sum.CorrelationID))
		if req.Schema != "" {
			fmt.Fprintf(&b, "Narrowed to one schema: %s left out as another schema's; rows that name no relation are kept.\n", plural(rd.Narrowed, "row"))
		}
		if rd.Past > 0 {
			fmt.Fprintf(&b, "The first %s in the reading's order are shown; %d more were not (the limit).\n", plural(sum.Rows, "row"), rd.Past)
		}
		if rd.Hidden > 0 {
			fmt.Fprintf(&b, "%s left out: they name a relation this connection's readable patterns hide.\n", plural(rd.Hidden, "row"))
		}
		if rd.Withheld > 0 {
			fmt.Fprintf(&b, "%s withheld (shown as NULL): they name a relation this connection's readable patterns hide.\n", plural(rd.Withheld, "statement text"))
		}
		for _, n := range rd.Notes {
			b.WriteString("Note: " + n + ".\n")
		}
		b.WriteString(MomentNotHistory + "\n")
		b.WriteString(c.sentence("rows", "reading", sum.CorrelationID, "take it again with a smaller limit or narrowed to one schema to see the rest"))
		b.WriteString(fence.Wrap("reading from connection "+req.ConnectionID, head+strings.Join(kept, "")))
		return b.String()
	})
}
