package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/sondehq/sonde/contracts"
	pgguard "github.com/sondehq/sonde/pkg/guard/postgres"
)

// usesSQL finds, among the names a statement uses, those that would run code
// the guard did not consent to, as the session that runs the statement
// resolves them (its search path, current_schemas):
//
//   - a function called by name ($1) or an operator written ($2) that is
//     user-defined (oid >= 16384, FirstNormalObjectId) and not part of an
//     installed extension: overload resolution may pick it over the
//     built-in of the same name;
//   - a name in attribute position ($3, with the table it would be a column
//     of in $4.$5) that is not a column of that table while a function of
//     that name takes one argument and is either user-defined outside an
//     extension or off the allowlist ($6 lists the allowlisted ones): then
//     PostgreSQL reads x.f as f(x);
//   - a user-defined cast function (outside an extension) that is implicit,
//     so any coercion may call it, or that casts into a type the statement
//     names in a cast ($7): CREATE CAST … WITH FUNCTION runs that function
//     with the rights it was given, written as a plain x::int.
const usesSQL = `WITH path AS (
  SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = ANY (pg_catalog.current_schemas(true))
)
SELECT 'function', p.proname::text
  FROM pg_catalog.pg_proc p
 WHERE p.proname = ANY ($1::text[]) AND p.oid >= 16384 AND p.pronamespace IN (SELECT oid FROM path)
   AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d
                    WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = p.oid AND d.deptype = 'e')
UNION ALL
SELECT 'operator', o.oprname::text
  FROM pg_catalog.pg_operator o
 WHERE o.oprname = ANY ($2::text[]) AND o.oid >= 16384 AND o.oprnamespace IN (SELECT oid FROM path)
   AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d
                    WHERE d.classid = 'pg_catalog.pg_operator'::pg_catalog.regclass AND d.objid = o.oid AND d.deptype = 'e')
UNION ALL
SELECT 'attribute', a.name
  FROM unnest($3::text[], $4::text[], $5::text[]) AS a(name, nsp, rel)
 WHERE NOT EXISTS (
         SELECT 1 FROM pg_catalog.pg_attribute t
           JOIN pg_catalog.pg_class c ON c.oid = t.attrelid
           JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
          WHERE a.rel <> '' AND n.nspname = a.nsp AND c.relname = a.rel
            AND t.attname = a.name AND t.attnum > 0 AND NOT t.attisdropped)
   AND EXISTS (
         SELECT 1 FROM pg_catalog.pg_proc p
          WHERE p.proname = a.name AND p.pronamespace IN (SELECT oid FROM path)
            AND p.prokind IN ('f', 'a', 'w')
            AND (p.provariadic <> 0 OR p.pronargs >= 1 AND p.pronargs - p.pronargdefaults <= 1)
            AND (NOT a.name = ANY ($6::text[])
                 OR p.oid >= 16384 AND NOT EXISTS (
                      SELECT 1 FROM pg_catalog.pg_depend d
                       WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = p.oid AND d.deptype = 'e')))
UNION ALL
SELECT CASE c.castcontext WHEN 'i' THEN 'implicit cast' ELSE 'cast' END, pg_catalog.format_type(c.castsource, NULL) || ' to ' || pg_catalog.format_type(c.casttarget, NULL)
  FROM pg_catalog.pg_cast c
 WHERE c.castfunc >= 16384
   AND (c.castcontext = 'i'
        OR c.casttarget IN (SELECT t.oid FROM pg_catalog.pg_type t WHERE t.typname = ANY ($7::text[])))
   AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d
                    WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = c.castfunc AND d.deptype = 'e')`

// checkUses looks the names of uses up in the catalog, on conn inside the
// statement's transaction, and refuses (function_denied) the statement when
// one of them would run a user-defined function, operator or cast, or call
// a function off the allowlist through attribute notation.
func checkUses(ctx context.Context, conn *pgx.Conn, uses *pgguard.Uses) error {
	// No early return for a statement that names nothing: an implicit user
	// cast can run wherever PostgreSQL coerces a value (CASE, UNION, …).
	names, schemas, tables, allowed := []string{}, []string{}, []string{}, []string{}
	for _, a := range uses.Attributes {
		names, schemas, tables = append(names, a.Name), append(schemas, a.Schema), append(tables, a.Table)
		if pgguard.FunctionAllowed(a.Name) {
			allowed = append(allowed, a.Name)
		}
	}
	casts := []string{}
	for _, c := range uses.Casts {
		casts = append(casts, c, "_"+c) // the type and its array type
	}
	rows, err := conn.Query(ctx, usesSQL, pgx.QueryExecModeDescribeExec,
		nonNil(uses.Functions), nonNil(uses.Operators), names, schemas, tables, allowed, casts)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var kind, name string
		if err := rows.Scan(&kind, &name); err != nil {
			return err
		}
		rows.Close()
		return refusal(kind, name)
	}
	return rows.Err()
}

func refusal(kind, name string) *contracts.Refusal {
	switch kind {
	case "function":
		return &contracts.Refusal{Code: contracts.RefuseFunctionDenied,
			Reason: fmt.Sprintf("%s() may resolve to a user-defined function of this database: only PostgreSQL's built-in functions may run", name),
			Fix:    "compute it with built-in functions and operators"}
	case "cast":
		return &contracts.Refusal{Code: contracts.RefuseFunctionDenied,
			Reason: fmt.Sprintf("the cast from %s is user-defined in this database: it runs a user function, and only PostgreSQL's built-in functions may run", name),
			Fix:    "leave the cast out, or cast to another built-in type"}
	case "implicit cast":
		return &contracts.Refusal{Code: contracts.RefuseFunctionDenied,
			Reason: fmt.Sprintf("this database has a user-defined implicit cast from %s: PostgreSQL may call its function wherever it converts a value, so no read runs while it exists", name),
			Fix:    "nothing in the statement avoids it: the database's administrator must drop the cast (DROP CAST) or recreate it AS EXPLICIT (docs/executor-postgres.md)"}
	case "operator":
		return &contracts.Refusal{Code: contracts.RefuseFunctionDenied,
			Reason: fmt.Sprintf("the operator %s may resolve to a user-defined operator of this database: only PostgreSQL's built-in operators may run", name),
			Fix:    "write the comparison or computation with built-in operators on built-in types"}
	}
	return &contracts.Refusal{Code: contracts.RefuseFunctionDenied,
		Reason: fmt.Sprintf("%s, written as an attribute (x.%s), is not a column of that table here and calls the function %s(x), which is not allowed", name, name, name),
		Fix:    fmt.Sprintf("read a column: inspect_schema shows each table's columns; if %s is a column of a subquery, rename it there", name)}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
