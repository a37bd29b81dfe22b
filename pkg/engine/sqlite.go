package engine

import (
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// sqlite is SQLite (services/executor/internal/sqlite, pkg/guard/sqlite).
var sqlite = Spec{
	Name:    contracts.EngineSQLite,
	Label:   "SQLite",
	Dialect: "SQLite",
	Names:   guard.NamesASCIIFold,
	DialectHints: []string{
		"LIMIT n, not TOP; no ILIKE (LIKE already ignores ASCII case)",
		"dates are usually TEXT: strftime('%Y-%m', col) or substr(col, 1, 7), date('now') for today",
		"IFNULL or COALESCE, not ISNULL; || joins strings",
		"integer / integer truncates: multiply by 1.0 for ratios",
	},
	DialectAliases: []string{"sqlite", "sqlite3"},
	Placeholders:   "?, ?NNN",
	DefaultSchema:  "main",
	FileBased:      true,
	Capabilities:   Capabilities{WeighedReplay: true},
	Safety: Safety{
		Guard:    "SQLite's own compiler and authorizer",
		ReadOnly: "the file is opened read-only (mode=ro) with query_only set, and the authorizer refuses writes at run time",
		LastLine: "the file's permissions",
	},
}
