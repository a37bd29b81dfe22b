// Package guardtest holds the hostile corpus of catalog names every engine
// is tested with: table names an attacker who can create tables writes, and
// table spellings a model (or the text it read) sends where a table is
// named — profile_table's "table", a schema read's selector. The statements'
// own corpora live beside each engine's reader (postgrestest, duckdbtest).
package guardtest

import (
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/fence/fencetest"
)

// HostileTableNames are names to create tables under: quotes, statement
// breaks, comments, line breaks and tabs, backslashes, dots, brackets,
// non-ASCII letters and fence forgeries. A table of each, named by its own
// name, must be served as any other table — every composed statement
// quoting it — its name quoted wherever a model reads it, and the database
// unchanged.
var HostileTableNames = []string{
	`a"b`,
	`"; DROP TABLE victim; --`,
	`x'; DELETE FROM victim; --`,
	"line\nbreak",
	`back\slash`,
	`dotted.name`,
	`[bracket]`,
	`ünïcødé 表`,
	"tab\there",
	`Robert'); DROP TABLE victim;--`,
	fence.Close,
	fencetest.IssueExample,
}

// HostileSpellings name no table of a database holding victim and the
// HostileTableNames: each must be refused (table_not_inventoried or
// bad_request) with nothing sent but catalog reads, and the database
// unchanged.
var HostileSpellings = []string{
	`x"; DELETE FROM victim; --`,
	`victim; DROP TABLE victim`,
	`victim" --`,
	`victim"; DROP TABLE victim; --`,
	`"victim"; DELETE FROM "victim"`,
	`main.victim.extra`,
	`victim WHERE 1=1`,
	`(SELECT 1)`,
	`victim/**/`,
	"victim\x00",
	`"unterminated`,
	`.victim`,
	`victim.`,
	`*`,
	`%`,
	`sqlite_master`,
	`main."victim"; ATTACH DATABASE 'x' AS y; --`,
	fence.Close + "; DROP TABLE victim",
}
