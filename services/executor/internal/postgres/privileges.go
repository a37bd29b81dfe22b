package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

var _ engine.PrivilegeChecker = (*Engine)(nil)

// writeSQL lists why the session's role could write, one reason a row: the
// role's attributes, write-capable predefined roles it has, and each object
// outside the system schemas it may change — tables and views it may
// INSERT, UPDATE, DELETE or TRUNCATE (or owns), sequences it may advance,
// schemas it may create in, and the database itself. At most 20 objects of
// each kind are named; a count says how many more.
const writeSQL = `WITH me AS (
  SELECT r.* FROM pg_catalog.pg_roles r WHERE r.rolname = current_user
), rel AS (
  SELECT n.nspname, c.relname, c.relkind,
         array_remove(ARRAY[
           CASE WHEN pg_catalog.has_table_privilege(c.oid, 'INSERT') THEN 'INSERT' END,
           CASE WHEN pg_catalog.has_table_privilege(c.oid, 'UPDATE') THEN 'UPDATE' END,
           CASE WHEN pg_catalog.has_table_privilege(c.oid, 'DELETE') THEN 'DELETE' END,
           CASE WHEN pg_catalog.has_table_privilege(c.oid, 'TRUNCATE') THEN 'TRUNCATE' END,
           CASE WHEN NOT pg_catalog.has_table_privilege(c.oid, 'INSERT, UPDATE')
                     AND pg_catalog.has_any_column_privilege(c.oid, 'INSERT, UPDATE') THEN 'column INSERT/UPDATE' END,
           CASE WHEN pg_catalog.pg_has_role(c.relowner, 'USAGE') THEN 'owner' END], NULL) AS privs
    FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
   WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
     AND n.nspname <> 'information_schema' AND n.nspname !~ '^pg_'
), w AS (
  SELECT nspname, relname, relkind,
         CASE WHEN relkind = 'S' THEN array_remove(ARRAY[
                CASE WHEN pg_catalog.has_sequence_privilege(pg_catalog.quote_ident(nspname) || '.' || pg_catalog.quote_ident(relname), 'USAGE, UPDATE') THEN 'nextval/setval' END,
                CASE WHEN 'owner' = ANY (privs) THEN 'owner' END], NULL)
              ELSE privs END AS privs
    FROM rel
), objs AS (
  SELECT row_number() OVER (PARTITION BY relkind = 'S' ORDER BY nspname, relname) AS k,
         count(*) OVER (PARTITION BY relkind = 'S') AS total,
         CASE WHEN relkind = 'S' THEN 'sequence ' ELSE 'table ' END
           || pg_catalog.quote_ident(nspname) || '.' || pg_catalog.quote_ident(relname)
           || ': ' || array_to_string(privs, ', ') AS reason
    FROM w WHERE cardinality(privs) > 0
)
SELECT 'superuser' FROM me WHERE rolsuper
UNION ALL SELECT 'CREATEROLE: can create roles and grant itself their rights' FROM me WHERE rolcreaterole
UNION ALL SELECT 'CREATEDB: can create databases' FROM me WHERE rolcreatedb
UNION ALL SELECT 'member of ' || r.rolname FROM pg_catalog.pg_roles r
   WHERE r.rolname IN ('pg_write_all_data', 'pg_write_server_files', 'pg_execute_server_program', 'pg_signal_backend')
     AND r.rolname <> current_user AND pg_catalog.pg_has_role(r.oid, 'USAGE')
     AND NOT (SELECT rolsuper FROM me)
UNION ALL SELECT 'CREATE on database ' || pg_catalog.quote_ident(pg_catalog.current_database())
   WHERE pg_catalog.has_database_privilege(pg_catalog.current_database(), 'CREATE')
UNION ALL SELECT 'CREATE on schema ' || pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_namespace n
   WHERE n.nspname <> 'information_schema' AND n.nspname !~ '^pg_'
     AND pg_catalog.has_schema_privilege(n.oid, 'CREATE')
UNION ALL SELECT reason FROM objs WHERE k <= 20
UNION ALL SELECT (total - 20) || ' more ' || CASE WHEN reason LIKE 'sequence %' THEN 'sequences' ELSE 'tables' END
   FROM objs WHERE k = 21`

// WriteCapable returns why the role that runs this connection's reads could
// write — the superuser attribute, a write-capable role attribute or
// predefined role (pg_signal_backend: it can end other sessions), a write privilege or ownership of a table, view or
// sequence, CREATE on a schema or on the database — or nil when it cannot.
// Reads stay read-only regardless (BEGIN READ ONLY, the guard); what such a
// role loses is the database's own last line: views, functions and
// operators run with its rights (docs/executor-postgres.md).
func (e *Engine) WriteCapable(ctx context.Context) ([]string, error) {
	var reasons []string
	err := func() error {
		c, err := e.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer c.Release()
		rows, err := c.Conn().Query(ctx, writeSQL, pgx.QueryExecModeDescribeExec)
		if err != nil {
			return err
		}
		reasons, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	}()
	if err != nil {
		d := classify(ctx, err)
		return nil, fmt.Errorf("postgres: privileges of the read role: %w", d)
	}
	if len(reasons) == 0 {
		return nil, nil
	}
	if reasons[0] == "superuser" {
		return reasons[:1], nil // it can do anything; the rest is noise
	}
	for i, r := range reasons {
		reasons[i] = strings.TrimSpace(r)
	}
	return reasons, nil
}

// blockersSQL lists what refuses every read of this connection (or every
// read of a kind) whatever the statement, one reason a row: user-defined
// implicit casts (any coercion may call them: checkSQL's implicit cast),
// user-defined btree and hash operator classes and families (any sort,
// group, comparison or cast may run them), and pinned settings ($1, $2) the
// session does not show.
var blockersSQL = `SELECT 'this database has a user-defined implicit cast from '
       || pg_catalog.format_type(c.castsource, NULL) || ' to ' || pg_catalog.format_type(c.casttarget, NULL)
       || ': PostgreSQL may call its function wherever it converts a value, so every read is refused until it is dropped or recreated AS EXPLICIT'
  FROM pg_catalog.pg_cast c
 WHERE c.castcontext = 'i' AND ` + userDefined(procClass, "c.castfunc") + `
UNION ALL
SELECT 'this database has a user-defined ' || pg_catalog.pg_describe_object('pg_catalog.pg_opfamily'::pg_catalog.regclass, f.oid, 0)
       || ': every read that sorts, groups, compares or casts is refused while it exists'
  FROM pg_catalog.pg_opfamily f JOIN pg_catalog.pg_am a ON a.oid = f.opfmethod AND a.amname IN ('btree', 'hash')
 WHERE ` + userDefined(`'pg_catalog.pg_opfamily'::pg_catalog.regclass`, "f.oid") + `
UNION ALL
SELECT 'the database session shows ' || s.name || ' = ' || coalesce(pg_catalog.current_setting(s.name, true), '')
       || ' though the executor set it to ' || s.want || ' (a connection pooler that drops startup parameters?): every read is refused'
  FROM unnest($1::text[], $2::text[]) AS s(name, want)
 WHERE pg_catalog.current_setting(s.name, true) IS DISTINCT FROM s.want`

// ReadBlockers returns what refuses every read on this connection, or
// every read of a common kind, whatever the statement says — a user-defined
// implicit cast, a user-defined btree or hash operator class or family, a
// pinned setting the server does not show — so that the connection can
// warn before any read is refused; nil when nothing does. Like
// WriteCapable, the executor asks once the connection is open.
func (e *Engine) ReadBlockers(ctx context.Context) ([]string, error) {
	names, values := []string{}, []string{}
	for _, p := range pinned {
		names, values = append(names, p.Name), append(values, p.Value)
	}
	var reasons []string
	err := func() error {
		c, err := e.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer c.Release()
		rows, err := c.Conn().Query(ctx, blockersSQL, pgx.QueryExecModeExec, names, values)
		if err != nil {
			return err
		}
		reasons, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	}()
	if err != nil {
		return nil, fmt.Errorf("postgres: what blocks every read: %w", classified(ctx, err))
	}
	if len(reasons) == 0 {
		return nil, nil
	}
	return reasons, nil
}
