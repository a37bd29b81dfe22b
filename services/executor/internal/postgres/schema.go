package postgres

import (
	"context"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	pgguard "github.com/sondehq/sonde/pkg/guard/postgres"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// SchemaSQL is the catalog read of a schema operation. Its first two columns
// (the schema and the table an object belongs to) are for the readable
// filter; the rest is the shape every engine's schema read has — type, name,
// tbl_name, sql — with names qualified by their schema: each table, view,
// materialized view and foreign table outside the system schemas with DDL
// composed from pg_catalog (columns with their types and NOT NULL, then
// primary, unique, foreign key and check constraints), and each index that
// is not the primary key's. $1 narrows to a schema and $2 to a table (empty:
// all).
const SchemaSQL = `WITH rel AS (
  SELECT c.oid, n.nspname, c.relname, c.relkind,
         pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname) AS qname
    FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
   WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
     AND n.nspname <> 'information_schema' AND n.nspname !~ '^pg_'
     AND ($1::text = '' OR n.nspname = $1::text)
     AND ($2::text = '' OR c.relname = $2::text))
SELECT r.nspname, r.relname,
       CASE r.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign table' ELSE 'table' END,
       r.qname, r.qname,
       CASE WHEN r.relkind = 'v' THEN 'CREATE VIEW ' || r.qname || ' AS' || chr(10) || pg_catalog.pg_get_viewdef(r.oid)
            WHEN r.relkind = 'm' THEN 'CREATE MATERIALIZED VIEW ' || r.qname || ' AS' || chr(10) || pg_catalog.pg_get_viewdef(r.oid)
            ELSE 'CREATE ' || CASE r.relkind WHEN 'f' THEN 'FOREIGN ' ELSE '' END || 'TABLE ' || r.qname || ' (' || chr(10) ||
                 pg_catalog.array_to_string(ARRAY(
                   SELECT '  ' || pg_catalog.quote_ident(a.attname) || ' ' || pg_catalog.format_type(a.atttypid, a.atttypmod) ||
                          CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END
                     FROM pg_catalog.pg_attribute a
                    WHERE a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum)
                 || ARRAY(
                   SELECT '  ' || pg_catalog.pg_get_constraintdef(k.oid, true)
                     FROM pg_catalog.pg_constraint k
                    WHERE k.conrelid = r.oid AND k.contype IN ('p', 'u', 'f', 'c')
                    ORDER BY CASE k.contype WHEN 'p' THEN 0 WHEN 'u' THEN 1 WHEN 'f' THEN 2 ELSE 3 END, k.conname),
                 ',' || chr(10)) || chr(10) || ')'
       END
  FROM rel r
UNION ALL
SELECT r.nspname, r.relname, 'index',
       pg_catalog.quote_ident(r.nspname) || '.' || pg_catalog.quote_ident(ic.relname), r.qname,
       pg_catalog.pg_get_indexdef(i.indexrelid)
  FROM rel r
  JOIN pg_catalog.pg_index i ON i.indrelid = r.oid AND NOT i.indisprimary
  JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid
 ORDER BY 1, 2, 3 DESC, 4`

// schemaColumns are the columns of a schema read's result.
var schemaColumns = []contracts.Column{{Name: "type", Type: "text"}, {Name: "name", Type: "text"},
	{Name: "tbl_name", Type: "text"}, {Name: "sql", Type: "text"}}

// Schema reads the DDL of the tables req.Schema and req.Table narrow to,
// keeping only the connection's readable tables, within req.Limits.
func (e *Engine) Schema(ctx context.Context, req engine.Request) (engine.Result, error) {
	all := req
	all.Limits = rowset.Limits{MaxRows: 1 << 20, MaxBytes: 64 << 20, Truncate: true}
	res, err := e.run(ctx, SchemaSQL, []any{req.Schema, req.Table}, all)
	if err != nil {
		return res, err
	}
	out := rowset.New(schemaColumns, req.Limits)
	readable := guard.Policy{Readable: e.policy.Readable, DefaultSchema: e.policy.DefaultSchema}
	for _, row := range res.Rows.Rows {
		schema, _ := row[0].(string)
		table, _ := row[1].(string)
		// The catalog's names are exact: "GENRE" is not public.genre.
		t := guard.Table{Schema: schema, Name: table, System: pgguard.SystemSchema(schema)}
		if !readable.CanRead(guard.NamesExact, t) {
			continue
		}
		more, err := out.Add(row[2:])
		if err != nil {
			return res, err
		}
		if !more {
			break
		}
	}
	res.Rows = out
	return res, nil
}
