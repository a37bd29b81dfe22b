package duckdb

import (
	"strings"

	"github.com/sondehq/sonde/pkg/guard"
)

// DuckDB resolves an unqualified table name through its search path: the
// database's own main schema, then the system catalog's main and pg_catalog
// schemas, which hold DuckDB's internal views (duckdb_columns,
// pragma_database_list, sqlite_master, pg_settings, …). Those views show the
// whole catalog, the file's path and the instance's settings, so the reader
// marks every name that can resolve to one System: readable only when a
// pattern names it, never through main.*. The reader does not know the
// database's own tables, so a user table that shares a name with an internal
// view is marked too — refused unless named, never admitted by mistake.
//
// The lists are DuckDB's internal views (duckdb_views() WHERE internal);
// TestSystemViewsCoverDuckDB holds them to the DuckDB this project builds with.

// SystemMainViews are the internal views of the system catalog's main
// schema, reachable unqualified or as main.<name>.
var SystemMainViews = set(
	"duckdb_columns", "duckdb_constraints", "duckdb_databases", "duckdb_indexes", "duckdb_logs",
	"duckdb_schemas", "duckdb_tables", "duckdb_types", "duckdb_views", "pragma_database_list",
	"sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema",
)

// SystemPgCatalogViews are the internal views of the system catalog's
// pg_catalog schema, reachable unqualified or as pg_catalog.<name>.
var SystemPgCatalogViews = set(
	"pg_am", "pg_attrdef", "pg_attribute", "pg_class", "pg_collation", "pg_constraint", "pg_database",
	"pg_depend", "pg_description", "pg_enum", "pg_index", "pg_indexes", "pg_namespace",
	"pg_prepared_statements", "pg_proc", "pg_sequence", "pg_sequences", "pg_settings", "pg_tables",
	"pg_tablespace", "pg_type", "pg_views",
)

// SystemSchemas are schemas that hold only DuckDB's own catalog views,
// whatever the table's name.
var SystemSchemas = set("information_schema", "pg_catalog")

// SystemCatalogs are the catalogs DuckDB keeps for itself: the system
// catalog of the internal views and the temp catalog of the session.
var SystemCatalogs = set("system", "temp")

// resolveSystem marks t System when DuckDB can resolve its name to one of
// its own catalogs or views, and fills in the schema it resolves to. Names
// compare case-insensitively, as DuckDB compares them; a Unicode fold is
// wider than DuckDB's, which only marks more names System.
func resolveSystem(t *guard.Table) {
	catalog, schema, name := strings.ToLower(t.Catalog), strings.ToLower(t.Schema), strings.ToLower(t.Name)
	switch {
	case SystemCatalogs[catalog]:
		t.System = true
	case catalog == "" && SystemCatalogs[schema]:
		// system.duckdb_tables: a catalog and the default schema main.
		t.System = true
	case SystemSchemas[schema]:
		t.System = true
	case schema == "" && SystemMainViews[name]:
		t.System, t.Schema = true, "main"
	case schema == "main" && SystemMainViews[name]:
		t.System = true
	case schema == "" && SystemPgCatalogViews[name]:
		t.System, t.Schema = true, "pg_catalog"
	}
}
