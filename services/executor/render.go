package executor

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// evidence is how the model cites an artifact, verbatim.
func evidence(cid string) string {
	b, _ := json.Marshal(struct {
		Source        string `json:"source"`
		CorrelationID string `json:"correlationId"`
	}{"artifact", cid})
	return string(b)
}

// renderRows renders a read's result for the model: a line the server
// writes (size, truncation, how to cite it), then the rows fenced, a header
// of column names and one line per row, values joined by " | ".
func renderRows(connID string, sum contracts.ArtifactSummary, set *rowset.Set) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Result of the read on connection %s: %s, %s", connID, plural(sum.Rows, "row"), plural(len(sum.Columns), "column"))
	if sum.Truncated {
		fmt.Fprintf(&b, " (truncated by %s: the statement returned more)", strings.Join(sum.TruncatedBy, ", "))
	}
	fmt.Fprintf(&b, ". Cite it as %s.\n", evidence(sum.CorrelationID))

	b.WriteString(fence.Wrap("rows read from connection "+connID, table(set)))
	return b.String()
}

// writeRows writes one line per row, values joined by " | ", each on one
// line (rowset.Text).
// table writes set as a header line of its column names and its rows,
// cells separated by " | ".
func table(set *rowset.Set) string {
	var b strings.Builder
	for i, c := range set.Columns {
		if i > 0 {
			b.WriteString(" | ")
		}
		b.WriteString(rowset.Text(c.Name))
	}
	b.WriteByte('\n')
	writeRows(&b, set)
	return b.String()
}

func writeRows(b *strings.Builder, set *rowset.Set) {
	for _, row := range set.Rows {
		for i, v := range row {
			if i > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(rowset.Text(v))
		}
		b.WriteByte('\n')
	}
}

// renderPlan renders an estimating plan: a line the server writes (that it
// was not run, how to cite it), then, fenced — relation and index names are
// the database's — the summary (access per relation, the engine's
// estimates, steps not interpreted) and the plan as the engine wrote it.
func renderPlan(connID string, sum contracts.ArtifactSummary, set *rowset.Set, p *contracts.PlanSummary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Estimating plan on connection %s (the statement was not run). Cite it as %s.\n", connID, evidence(sum.CorrelationID))
	var body strings.Builder
	if p.HypotheticalIndex != "" {
		fmt.Fprintf(&body, "Planned as if this index existed (hypothetical: nothing was created): %s\n", rowset.Text(p.HypotheticalIndex))
	}
	body.WriteString("Summary:\n")
	for _, a := range p.Access {
		fmt.Fprintf(&body, "- %s: %s", rowset.Text(a.Relation), a.Access)
		if a.Index != "" {
			fmt.Fprintf(&body, " (%s)", rowset.Text(a.Index))
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
		fmt.Fprintf(&body, "Steps the summary does not interpret (see the plan): %s\n", rowset.Text(strings.Join(p.Uninterpreted, ", ")))
	}
	body.WriteString("Plan:\n")
	writeRows(&body, set)
	b.WriteString(fence.Wrap("plan read from connection "+connID, body.String()))
	return b.String()
}

// renderError renders a classified database error, the engine's text fenced.
func renderError(connID string, e *contracts.DBError) string {
	return fmt.Sprintf("The database failed the statement (%s):\n%s", e.Class,
		fence.Wrap("error from connection "+connID, e.Message))
}

// renderRefusal renders a refusal. Its words are the executor's own, but a
// reason may quote the statement or the engine's parser (names, literals),
// so it is neutralised.
func renderRefusal(r *contracts.Refusal) string {
	return fence.Neutralise(fmt.Sprintf("Refused (%s): %s.\nFix: %s.", r.Code, r.Reason, r.Fix))
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
