package engine

import (
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// mssql is SQL Server (services/executor/internal/mssql, pkg/guard/mssql).
var mssql = Spec{
	Name:    contracts.EngineMSSQL,
	Label:   "SQL Server",
	Dialect: "SQL Server (T-SQL)",
	Names:   guard.NamesFold,
	DialectHints: []string{
		"TOP (n) after SELECT, or ORDER BY … OFFSET 0 ROWS FETCH NEXT n ROWS ONLY; there is no LIMIT",
		"[brackets] or double quotes around names that need quoting",
		"DATEPART, DATEFROMPARTS and FORMAT(d, 'yyyy-MM') for dates; GETDATE() for now",
		"ISNULL or COALESCE; + or CONCAT() joins strings",
		"integer / integer truncates: multiply by 1.0 for ratios",
	},
	DialectAliases: []string{"mssql", "tsql", "t-sql", "sqlserver", "sql-server"},
	DefaultSchema:  "dbo",
	DefaultPort:    "1433",
	Safety: Safety{
		Guard:    "a reader of SQL Server's grammar, with a showplan check",
		ReadOnly: "reads run in a snapshot transaction with ApplicationIntent=ReadOnly (not verified against a live server)",
		LastLine: "the login the connection reads as",
	},
}
