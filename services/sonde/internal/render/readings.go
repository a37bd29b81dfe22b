package render

import (
	"fmt"
	"io"

	"github.com/sondehq/sonde/contracts"
)

func printReadings(out io.Writer, r contracts.Record, fetch Source) {
	n := 0
	for _, s := range r.Steps {
		if s.Tool != toolInspectOperations || s.Artifact == nil {
			continue
		}
		if n == 0 {
			fmt.Fprintln(out, "Operational readings (each a moment, not a history)")
		}
		n++
		kind := stepArg(s, "kind")
		if kind == "" {
			kind = "reading"
		}
		head := fmt.Sprintf("%2d. %s", n, Clip(kind, 40))
		if schema := stepArg(s, "schema"); schema != "" {
			head += " in schema " + Clip(schema, 60)
		}
		head += fmt.Sprintf(", artifact %s, %d rows", Clip(s.Artifact.CorrelationID, 80), s.Artifact.Rows)
		fmt.Fprintf(out, "%s: a moment, not a history\n", head)
		columns := s.Artifact.Columns
		if len(columns) == 0 {
			columns = contracts.OperationsColumns[contracts.OperationsKind(kind)]
		}
		if s.Artifact.Rows == 0 {
			fmt.Fprintf(out, "    no rows: nothing to report of this kind (columns %s)\n", columnNames(columns))
			continue
		}
		writeArtifactRows(out, "    ", s.Artifact.CorrelationID, columns, fetch)
	}
	if n > 0 {
		fmt.Fprintln(out)
	}
}
