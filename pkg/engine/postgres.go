package engine

import (
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// postgres is PostgreSQL (services/executor/internal/postgres,
// pkg/guard/postgres).
var postgres = Spec{
	Name:    contracts.EnginePostgres,
	Label:   "PostgreSQL",
	Dialect: "PostgreSQL",
	Names:   guard.NamesExact,
	DialectHints: []string{
		"LIMIT n, not TOP",
		"a name with capitals must be double-quoted exactly as the schema shows it (\"OrderDate\"); unquoted names fold to lower case",
		"date_trunc('month', ts) and extract(year FROM ts) for dates; now() for the current time",
		"ILIKE for a case-insensitive match; || joins strings; ::numeric casts",
		"integer / integer truncates: divide by 1.0 * x or cast to numeric for ratios",
	},
	DialectAliases: []string{"postgres", "postgresql", "pgsql", "psql", "plpgsql"},
	Placeholders:   "$1, $2, …",
	DefaultSchema:  "public",
	DefaultPort:    "5432",
	Capabilities:   Capabilities{WeighedReplay: true},
	Safety: Safety{
		Guard:    "PostgreSQL's own parser (libpg_query) and a catalog check of functions and operators",
		ReadOnly: "every read runs in a READ ONLY transaction with default_transaction_read_only on, one statement per call",
		LastLine: "the role the connection reads as",
	},
}
