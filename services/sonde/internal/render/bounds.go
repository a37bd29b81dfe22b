package render

// Bounds of what a workflow section prints.
const (
	// maxTextRunes bounds one line of prose or one statement.
	maxTextRunes = 300
	// maxCellRunes bounds one table cell before the table is fitted.
	maxCellRunes = 40
	// tableWidth is the widest a table's line may be (without its indent);
	// the widest columns are narrowed until it fits.
	tableWidth = 150
	// minColumnWidth is as narrow as fitting makes a column.
	minColumnWidth = 8
	// maxTableRows and maxTableColumns bound the rows and columns printed.
	maxTableRows    = 20
	maxTableColumns = 8
	// maxChartRows and maxChartSeries bound a chart's table.
	maxChartRows   = 30
	maxChartSeries = 4
	// chartBarWidth is the cells the bars of all series share.
	chartBarWidth = 32
	// maxListItems bounds a list such as uninterpreted plan steps.
	maxListItems = 8
)
