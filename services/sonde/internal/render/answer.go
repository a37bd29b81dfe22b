package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/sondehq/sonde/contracts"
)

// printAnswer prints the presented answer: a chart as the server decided it
// (see writeChart), or the table of its rows, then what the editor does with
// it.
func printAnswer(out io.Writer, r contracts.Record, fetch Source) {
	a := r.Answer
	if a == nil {
		return
	}
	var summary *contracts.ArtifactSummary
	for _, s := range r.Steps {
		if s.Artifact != nil && s.Artifact.CorrelationID == a.CorrelationID {
			summary = s.Artifact
		}
	}
	id := Clip(a.CorrelationID, 80)
	chart := a.Presentation.Chart
	if a.Presentation.Kind == contracts.PresentChart && chart != nil {
		fmt.Fprintf(out, "Answer: a %s chart of artifact %s\n", Clip(chart.Type, 20), id)
		fmt.Fprintf(out, "    \"%s\"\n", Clip(chart.Caption, maxTextRunes))
		ys := make([]string, len(chart.Y))
		for i, y := range chart.Y {
			ys[i] = Clip(y, 40)
		}
		fmt.Fprintf(out, "    x: %s · y: %s\n", Clip(chart.X, 40), strings.Join(ys, ", "))
	} else {
		fmt.Fprintf(out, "Answer: a table, artifact %s\n", id)
	}
	if a.SQL != "" {
		fmt.Fprintf(out, "    %s\n", Clip(a.SQL, maxTextRunes))
	}
	switch {
	case fetch == nil:
		fmt.Fprintf(out, "    rows not fetched: read them with GET /api/agent/runs/%s/artifacts/%s\n", Clip(r.RunID, 80), id)
	case chart != nil && a.Presentation.Kind == contracts.PresentChart:
		art, err := fetch(a.CorrelationID)
		if err != nil {
			fmt.Fprintf(out, "    rows not available: %s\n", Clip(err.Error(), maxTextRunes))
			break
		}
		writeChart(out, "    ", chart, a.Chart, art)
	default:
		var columns []contracts.Column
		if summary != nil {
			columns = summary.Columns
		}
		writeArtifactRows(out, "    ", a.CorrelationID, columns, fetch)
	}
	switch a.Handover {
	case contracts.HandoverAutoExecuted:
		fmt.Fprintf(out, "Handover: auto-executed: replay it as the editor does with: sonde handover %s\n", Clip(r.RunID, 80))
	case contracts.HandoverApplied:
		fmt.Fprintln(out, "Handover: applied: the statement is offered to the editor, not run")
	case contracts.HandoverNone, "":
		fmt.Fprintln(out, "Handover: none (the run was not started with --auto-execute)")
	default:
		fmt.Fprintf(out, "Handover: %s\n", Clip(string(a.Handover), 40))
	}
	if a.HandoverWarning != "" {
		fmt.Fprintf(out, "    warning: %s\n", Clip(a.HandoverWarning, maxTextRunes))
	}
	fmt.Fprintln(out)
}
