package render

import (
	"fmt"
	"io"

	"github.com/sondehq/sonde/contracts"
)

// writeArtifactRows fetches a result and prints its rows as a table,
// bounded; without a source it says where the rows are.
func writeArtifactRows(out io.Writer, indent, correlationID string, columns []contracts.Column, fetch Source) {
	if fetch == nil {
		fmt.Fprintf(out, "%srows not fetched (columns %s)\n", indent, columnNames(columns))
		return
	}
	art, err := fetch(correlationID)
	if err != nil {
		fmt.Fprintf(out, "%srows not available: %s\n", indent, Clip(err.Error(), maxTextRunes))
		return
	}
	if len(art.Columns) > 0 {
		columns = art.Columns
	}
	ncol := min(len(columns), maxTableColumns)
	header := make([]string, ncol)
	for i := range header {
		header[i] = Clean(columns[i].Name)
	}
	var rows [][]string
	for i, row := range art.Data {
		if i == maxTableRows {
			break
		}
		cells := make([]string, ncol)
		for j := range cells {
			if j < len(row) {
				cells[j] = valueCell(row[j])
			}
		}
		rows = append(rows, cells)
	}
	right := make([]bool, ncol)
	for j := range right {
		right[j] = !textType(columns[j].Type) && numericColumn(art.Data, j)
	}
	writeTable(out, indent, header, rows, right)
	if len(art.Data) == 0 {
		fmt.Fprintf(out, "%sno rows\n", indent)
	}
	if len(art.Data) > maxTableRows {
		fmt.Fprintf(out, "%s… %d more rows not shown\n", indent, len(art.Data)-maxTableRows)
	}
	if len(columns) > maxTableColumns {
		fmt.Fprintf(out, "%s… %d more columns not shown\n", indent, len(columns)-maxTableColumns)
	}
	if art.Truncated {
		fmt.Fprintf(out, "%sthe result was truncated when it was read (%s)\n", indent, boundedList(art.TruncatedBy))
	}
}
