package engine

import (
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// duckdb is DuckDB (services/executor/internal/duckdb, pkg/guard/duckdb).
var duckdb = Spec{
	Name:    contracts.EngineDuckDB,
	Label:   "DuckDB",
	Dialect: "DuckDB",
	Names:   guard.NamesFold,
	DialectHints: []string{
		"LIMIT n, not TOP",
		"date_trunc('month', ts), strftime(ts, '%Y-%m') and year(ts) for dates",
		"ILIKE for a case-insensitive match; names are case-insensitive",
		"/ divides exactly; // is integer division",
	},
	DialectAliases: []string{"duckdb"},
	Placeholders:   "?, $1, … (as DuckDB's prepare counts them)",
	DefaultSchema:  "main",
	FileBased:      true,
	Capabilities:   Capabilities{IndexesForeignKeys: true},
	Safety: Safety{
		Guard:    "DuckDB's own parser on a locked in-memory instance",
		ReadOnly: "the file is opened read-only, with external access off and the configuration locked",
		LastLine: "the file's permissions",
	},
}
