package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	pgguard "github.com/sondehq/sonde/pkg/guard/postgres"
)

// objects is what the catalog check of one statement is given: what the
// guard's parse says it calls (uses) and the tables it names.
type objects struct {
	uses   *pgguard.Uses
	tables []guard.Table
}

// statementObjects is the check input of a guarded statement.
func statementObjects(st *guard.Statement, uses *pgguard.Uses) *objects {
	o := &objects{uses: uses}
	for _, sc := range st.Scopes {
		for _, t := range sc.Tables {
			o.tables = append(o.tables, t)
		}
	}
	return o
}

// userDefined is the test, on an object of catalog class $cls and oid $id,
// that it is user-defined: created after initdb (oid >= 16384,
// FirstNormalObjectId) and not a member of an installed extension.
func userDefined(cls, id string) string {
	return id + ` >= 16384 AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend e
                    WHERE e.classid = ` + cls + ` AND e.objid = ` + id + ` AND e.deptype = 'e')`
}

const (
	procClass  = `'pg_catalog.pg_proc'::pg_catalog.regclass`
	operClass  = `'pg_catalog.pg_operator'::pg_catalog.regclass`
	classClass = `'pg_catalog.pg_class'::pg_catalog.regclass`
)

// checkSQL is the catalog check of one statement, run inside its
// transaction just before it, as the session that runs it resolves names
// (its search path, current_schemas). Every row it returns is a reason to
// refuse, except the one 'timeout' row (the statement's SET LOCAL
// statement_timeout, $15, made in the same round trip). Each row is (kind,
// source, relation, object, schema, name): schema and name are those of a
// relation row's relation:
//
//   - setting: a pinned setting ($13, $14) the session does not show
//     (source the setting, relation what it shows);
//   - function: a function called by name ($1) or written with a schema
//     ($10.$11), or an operator written or implied ($2), that is
//     user-defined (oid >= 16384, FirstNormalObjectId) and not part of an
//     installed extension: overload resolution may pick it over the
//     built-in of the same name;
//   - attribute: a name in attribute position ($3, with the table it would
//     be a column of in $4.$5) that is not a column of that table while a
//     function of that name takes one argument and is either user-defined
//     outside an extension or off the allowlist ($6 lists the allowlisted
//     ones): then PostgreSQL reads x.f as f(x);
//   - cast / implicit cast: a user-defined cast function (outside an
//     extension) that is implicit, so any coercion may call it, or that
//     casts into a type the statement names in a cast ($7);
//   - opclass: when the statement sorts, groups, hashes or compares
//     through classes PostgreSQL picks itself ($12, Uses.Ordering) or casts
//     ($7, a range's subtype class), a user-defined btree or hash operator
//     class or family;
//   - relation: what the relations the statement names ($8, written as
//     the session resolves them; $9 the schema the guard read them in)
//     resolve to and reach: one resolved in another schema than the
//     guard's (resolved); an inheritance child or partition of one, at any
//     depth, in another schema than the table named (child: one in the
//     same schema is part of the table, and a table of ten thousand
//     partitions costs no rows); a foreign table anywhere, named or
//     reached through a view or as a child (foreign); the Go side holds
//     each to the readable patterns;
//   - code: user-defined functions and operators (outside an extension)
//     that the rules of the views reached (their _RETURN SELECT rule: the
//     view's body, at any depth), the row-level security policies of the
//     relations reached, or the constraints of a domain the statement casts
//     to or a view's body uses depend on (pg_depend).
var checkSQL = `WITH RECURSIVE path AS (
  SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = ANY (pg_catalog.current_schemas(true))
), named AS (
  SELECT pg_catalog.to_regclass(r.name) AS oid, r.want FROM unnest($8::text[], $9::text[]) AS r(name, want)
), reach(oid, via, root) AS (
  SELECT DISTINCT oid, 'named'::text, oid FROM named WHERE oid IS NOT NULL
  UNION
  SELECT x.oid, x.via, r.root FROM reach r, LATERAL (
    SELECT d.refobjid AS oid, 'view'::text AS via
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_rewrite w ON w.ev_class = c.oid
      JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass AND d.objid = w.oid
       AND d.refclassid = ` + classClass + ` AND d.refobjid <> c.oid
     WHERE c.oid = r.oid AND c.relkind = 'v'
    UNION ALL
    SELECT i.inhrelid, CASE r.via WHEN 'view' THEN 'view' ELSE 'child' END
      FROM pg_catalog.pg_inherits i WHERE i.inhparent = r.oid
  ) x
), deps AS (
  SELECT r.root, r.oid AS rel, 'view'::text AS src, d.refclassid, d.refobjid
    FROM reach r
    JOIN pg_catalog.pg_class c ON c.oid = r.oid AND c.relkind = 'v'
    JOIN pg_catalog.pg_rewrite w ON w.ev_class = c.oid
    JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass AND d.objid = w.oid
  UNION ALL
  SELECT r.root, r.oid, 'policy', d.refclassid, d.refobjid
    FROM reach r
    JOIN pg_catalog.pg_policy p ON p.polrelid = r.oid
    JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_policy'::pg_catalog.regclass AND d.objid = p.oid
), domains(oid, root, rel) AS (
  SELECT t.oid, 0::oid, 0::oid FROM pg_catalog.pg_type t WHERE t.typname = ANY ($7::text[]) AND t.typtype = 'd'
  UNION ALL
  SELECT d.refobjid, d.root, d.rel FROM deps d WHERE d.refclassid = 'pg_catalog.pg_type'::pg_catalog.regclass
  UNION
  SELECT t.typbasetype, dm.root, dm.rel FROM domains dm JOIN pg_catalog.pg_type t ON t.oid = dm.oid AND t.typtype = 'd'
), code AS (
  SELECT root, rel, src, refclassid, refobjid FROM deps
  UNION ALL
  SELECT dm.root, dm.rel, 'domain', d.refclassid, d.refobjid
    FROM domains dm
    JOIN pg_catalog.pg_constraint k ON k.contypid = dm.oid
    JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_constraint'::pg_catalog.regclass AND d.objid = k.oid
), timeout AS (
  SELECT CASE WHEN $15::text <> '' THEN pg_catalog.set_config('statement_timeout', $15::text, true) END AS v
)
SELECT 'timeout', '', '', '', '', '' FROM timeout
UNION ALL
SELECT 'setting', s.name, coalesce(pg_catalog.current_setting(s.name, true), ''), s.want, '', ''
  FROM unnest($13::text[], $14::text[]) AS s(name, want)
 WHERE pg_catalog.current_setting(s.name, true) IS DISTINCT FROM s.want
UNION ALL
SELECT 'function', '', '', p.proname::text, '', ''
  FROM pg_catalog.pg_proc p
 WHERE p.proname = ANY ($1::text[]) AND p.pronamespace IN (SELECT oid FROM path) AND ` + userDefined(procClass, "p.oid") + `
UNION ALL
SELECT 'function', '', '', pg_catalog.quote_ident(n.nspname) || '.' || p.proname::text, '', ''
  FROM unnest($10::text[], $11::text[]) AS q(nsp, name)
  JOIN pg_catalog.pg_namespace n ON n.nspname = q.nsp
  JOIN pg_catalog.pg_proc p ON p.pronamespace = n.oid AND p.proname = q.name
 WHERE ` + userDefined(procClass, "p.oid") + `
UNION ALL
SELECT 'operator', '', '', o.oprname::text, '', ''
  FROM pg_catalog.pg_operator o
 WHERE o.oprname = ANY ($2::text[]) AND o.oprnamespace IN (SELECT oid FROM path) AND ` + userDefined(operClass, "o.oid") + `
UNION ALL
SELECT 'attribute', '', '', a.name, '', ''
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
            AND (NOT a.name = ANY ($6::text[]) OR ` + userDefined(procClass, "p.oid") + `))
UNION ALL
SELECT CASE c.castcontext WHEN 'i' THEN 'implicit cast' ELSE 'cast' END, '', '',
       pg_catalog.format_type(c.castsource, NULL) || ' to ' || pg_catalog.format_type(c.casttarget, NULL), '', ''
  FROM pg_catalog.pg_cast c
 WHERE (c.castcontext = 'i'
        OR c.casttarget IN (SELECT t.oid FROM pg_catalog.pg_type t WHERE t.typname = ANY ($7::text[])))
   AND ` + userDefined(procClass, "c.castfunc") + `
UNION ALL
SELECT 'opclass', '', '', pg_catalog.pg_describe_object('pg_catalog.pg_opfamily'::pg_catalog.regclass, f.oid, 0), '', ''
  FROM pg_catalog.pg_opfamily f JOIN pg_catalog.pg_am a ON a.oid = f.opfmethod AND a.amname IN ('btree', 'hash')
 WHERE ($12::bool OR cardinality($7::text[]) > 0)
   AND ` + userDefined(`'pg_catalog.pg_opfamily'::pg_catalog.regclass`, "f.oid") + `
UNION ALL
SELECT 'relation', 'resolved', n.want, '', s.nspname::text, c.relname::text
  FROM named n
  JOIN pg_catalog.pg_class c ON c.oid = n.oid
  JOIN pg_catalog.pg_namespace s ON s.oid = c.relnamespace
 WHERE s.nspname <> n.want
UNION ALL
SELECT 'relation', CASE WHEN c.relkind = 'f' THEN 'foreign' ELSE r.via END,
       pg_catalog.quote_ident(rn.nspname) || '.' || pg_catalog.quote_ident(rc.relname),
       '', s.nspname::text, c.relname::text
  FROM reach r
  JOIN pg_catalog.pg_class c ON c.oid = r.oid
  JOIN pg_catalog.pg_namespace s ON s.oid = c.relnamespace
  JOIN pg_catalog.pg_class rc ON rc.oid = r.root
  JOIN pg_catalog.pg_namespace rn ON rn.oid = rc.relnamespace
 WHERE r.via = 'child' AND c.relnamespace <> rc.relnamespace OR c.relkind = 'f'
UNION ALL
SELECT 'code', k.src,
       coalesce((SELECT pg_catalog.quote_ident(rn.nspname) || '.' || pg_catalog.quote_ident(rc.relname)
                   FROM pg_catalog.pg_class rc JOIN pg_catalog.pg_namespace rn ON rn.oid = rc.relnamespace
                  WHERE rc.oid = k.rel), ''),
       pg_catalog.pg_describe_object(k.refclassid, k.refobjid, 0), '', ''
  FROM code k
 WHERE k.refclassid IN (` + procClass + `, ` + operClass + `) AND ` + userDefined("k.refclassid", "k.refobjid")

// checkObjects runs checkSQL for chk on conn, inside the statement's
// transaction, setting the statement's timeout (ms, none when empty) in the
// same round trip, and refuses the statement (function_denied,
// table_not_readable) for the first reason the catalog gives. A pinned
// setting the session does not show is a connection error: no read runs on
// it.
func (e *Engine) checkObjects(ctx context.Context, conn *pgx.Conn, chk *objects, ms string) error {
	uses := chk.uses
	if uses == nil {
		uses = &pgguard.Uses{}
	}
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
	qschemas, qnames := []string{}, []string{}
	for _, q := range uses.Qualified {
		qschemas, qnames = append(qschemas, q.Schema), append(qnames, q.Name)
	}
	rels, wants := []string{}, []string{}
	for _, t := range chk.tables {
		want := t.Schema
		switch {
		case t.Schema != "":
			rels = append(rels, pgx.Identifier{t.Schema, t.Name}.Sanitize())
		case t.System:
			want = "pg_catalog"
			rels = append(rels, pgx.Identifier{t.Name}.Sanitize())
		default:
			want = pgguard.DefaultSchema
			rels = append(rels, pgx.Identifier{t.Name}.Sanitize())
		}
		wants = append(wants, want)
	}
	settings, values := []string{}, []string{}
	for _, p := range pinned {
		settings, values = append(settings, p.Name), append(values, p.Value)
	}
	// QueryExecModeExec: the parameters' types are the Go values' own
	// (text[], bool), so parse, bind and execute go in one round trip.
	rows, err := conn.Query(ctx, checkSQL, pgx.QueryExecModeExec,
		nonNil(uses.Functions), nonNil(uses.Operators), names, schemas, tables, allowed, casts,
		rels, wants, qschemas, qnames, uses.Ordering, settings, values, ms)
	if err != nil {
		return err
	}
	defer rows.Close()
	var first error
	for rows.Next() {
		var kind, source, relation, object, schema, name string
		if err := rows.Scan(&kind, &source, &relation, &object, &schema, &name); err != nil {
			return err
		}
		if first == nil {
			first = e.reason(kind, source, relation, object, guard.Table{Schema: schema, Name: name, System: pgguard.SystemSchema(schema)})
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return first
}

// checkUses is the catalog check of what uses calls alone, with no
// relation (a hypothetical index's predicate), the timeout left as it is.
func (e *Engine) checkUses(ctx context.Context, conn *pgx.Conn, uses *pgguard.Uses) error {
	return e.checkObjects(ctx, conn, &objects{uses: uses}, "")
}

// reason is the refusal (or connection error) of one row of checkSQL, nil
// for a row that refuses nothing: the timeout, or a relation the readable
// patterns admit.
func (e *Engine) reason(kind, source, relation, object string, t guard.Table) error {
	switch kind {
	case "timeout":
		return nil
	case "setting":
		return unpinned(source, relation, object)
	case "relation":
		return e.relationReason(source, relation, t)
	case "code":
		return codeRefusal(source, relation, object)
	}
	return refusal(kind, object)
}

// unpinned is the error of a session that does not show a setting the
// startup packet pinned.
func unpinned(name, shown, want string) error {
	return lost(&contracts.DBError{Class: contracts.DBUnavailable, Message: fmt.Sprintf(
		"the database session's %s is %q, though the executor set it to %q when it connected (a connection pooler in between that drops startup parameters?): the guard reads statements with %s = %s, so no read runs on this connection; connect directly to PostgreSQL, or have the pooler pass the parameter",
		name, shown, want, name, want)})
}

// pinnedHeld checks, without a round trip, the pinned settings the server
// reports on its own (ParameterStatus: standard_conforming_strings,
// client_encoding, DateStyle, IntervalStyle), which it also reports again
// whenever one changes.
func pinnedHeld(pc *pgconn.PgConn) (bool, error) {
	for _, p := range pinned {
		if got := pc.ParameterStatus(p.Name); got != "" && got != p.Value {
			return false, unpinned(p.Name, got, p.Value)
		}
	}
	return true, nil
}

// explicitlyReadable reports whether a readable pattern names the table
// schema.name without a wildcard.
func (e *Engine) explicitlyReadable(t guard.Table) bool {
	for _, pat := range e.policy.Readable {
		if strings.Contains(pat, "*") {
			continue
		}
		p := e.policy
		p.Readable = []string{pat}
		if p.CanRead(guard.NamesExact, t) {
			return true
		}
	}
	return false
}

// relationReason holds a relation a statement reaches to the readable
// patterns: one its name resolves to in another schema and an inheritance
// child or partition of one it names like any named table; a foreign table
// — reading it runs its foreign-data wrapper (file_fdw's program option
// runs a shell command on the database host) — only when a pattern names
// it without a wildcard. A hidden relation is never named in the reason.
func (e *Engine) relationReason(source, root string, t guard.Table) error {
	fix := "read only tables matching: " + strings.Join(e.policy.Readable, ", ")
	switch source {
	case "resolved":
		if e.policy.CanRead(guard.NamesExact, t) {
			return nil
		}
		return &contracts.Refusal{Code: contracts.RefuseTableNotReadable,
			Message: fmt.Sprintf("a table the statement names in %s resolves in this session to a table of another schema, which is not readable on this connection", root),
			Fix:     "qualify the table with its schema"}
	case "child":
		if e.policy.CanRead(guard.NamesExact, t) {
			return nil
		}
		return &contracts.Refusal{Code: contracts.RefuseTableNotReadable,
			Message: fmt.Sprintf("%s has an inheritance child or partition that is not readable on this connection: reading %s reads that child's rows too", root, root),
			Fix:     fix + "; the database's administrator can make the child readable (readable patterns, grants) or detach it"}
	case "foreign":
		if e.explicitlyReadable(t) {
			return nil
		}
		quoted := pgx.Identifier{t.Schema, t.Name}.Sanitize()
		via := ""
		if root != quoted {
			via = fmt.Sprintf(" (reached through %s)", root)
		}
		if !e.policy.CanRead(guard.NamesExact, t) {
			return &contracts.Refusal{Code: contracts.RefuseTableNotReadable,
				Message: fmt.Sprintf("%s reads a foreign table that is not readable on this connection", root),
				Fix:     fix}
		}
		return &contracts.Refusal{Code: contracts.RefuseTableNotReadable,
			Message: fmt.Sprintf("%s is a foreign table%s: reading it runs its foreign-data wrapper (file_fdw can run a program on the database host), so it is read only when a readable pattern names it without a wildcard", quoted, via),
			Fix:     fmt.Sprintf("read another table, or have the connection's readable patterns name %s.%s itself", t.Schema, t.Name)}
	}
	return nil
}

// codeRefusal refuses a statement that reaches user-defined code through
// the catalog rather than by name: the body of a view it reads, a
// row-level security policy of a table it reads, or a domain's constraint.
func codeRefusal(source, rel, object string) *contracts.Refusal {
	switch source {
	case "view":
		return &contracts.Refusal{Code: contracts.RefuseFunctionDenied,
			Message: fmt.Sprintf("the view %s, which the statement reads, runs %s, user-defined in this database: only PostgreSQL's built-in functions and operators may run", rel, object),
			Fix:     "read the tables the view reads instead, with built-in functions and operators"}
	case "policy":
		return &contracts.Refusal{Code: contracts.RefuseFunctionDenied,
			Message: fmt.Sprintf("%s has a row-level security policy that runs %s, user-defined in this database: only PostgreSQL's built-in functions and operators may run", rel, object),
			Fix:     "read another table; the database's administrator can drop the policy or rewrite it with built-in functions"}
	}
	where := "a type the statement casts to"
	if rel != "" {
		where = "a type the view " + rel + " uses"
	}
	return &contracts.Refusal{Code: contracts.RefuseFunctionDenied,
		Message: fmt.Sprintf("%s is a domain whose constraint runs %s, user-defined in this database: only PostgreSQL's built-in functions and operators may run", where, object),
		Fix:     "cast to the domain's built-in base type instead"}
}

func refusal(kind, name string) *contracts.Refusal {
	switch kind {
	case "function":
		return &contracts.Refusal{Code: contracts.RefuseFunctionDenied,
			Message: fmt.Sprintf("%s() may resolve to a user-defined function of this database: only PostgreSQL's built-in functions may run", name),
			Fix:     "compute it with built-in functions and operators"}
	case "cast":
		return &contracts.Refusal{Code: contracts.RefuseFunctionDenied,
			Message: fmt.Sprintf("the cast from %s is user-defined in this database: it runs a user function, and only PostgreSQL's built-in functions may run", name),
			Fix:     "leave the cast out, or cast to another built-in type"}
	case "implicit cast":
		return &contracts.Refusal{Code: contracts.RefuseFunctionDenied,
			Message: fmt.Sprintf("this database has a user-defined implicit cast from %s: PostgreSQL may call its function wherever it converts a value, so no read runs while it exists", name),
			Fix:     "nothing in the statement avoids it: the database's administrator must drop the cast (DROP CAST) or recreate it AS EXPLICIT (docs/executor-postgres.md)"}
	case "operator":
		return &contracts.Refusal{Code: contracts.RefuseFunctionDenied,
			Message: fmt.Sprintf("the operator %s, written or implied (CASE x WHEN, USING, NATURAL, IN, LIKE …), may resolve to a user-defined operator of this database: only PostgreSQL's built-in operators may run", name),
			Fix:     "write the comparison or computation with built-in operators on built-in types, casting the operands to one type"}
	case "opclass":
		return &contracts.Refusal{Code: contracts.RefuseFunctionDenied,
			Message: fmt.Sprintf("this database has a user-defined %s: sorting, grouping, DISTINCT, UNION, comparisons and casts to a range may run its support functions, and only PostgreSQL's built-in functions may run", name),
			Fix:     "leave out the ordering, grouping, set operation, comparison or cast; the database's administrator can drop the operator class or family"}
	}
	return &contracts.Refusal{Code: contracts.RefuseFunctionDenied,
		Message: fmt.Sprintf("%s, written as an attribute (x.%s), is not a column of that table here and calls the function %s(x), which is not allowed", name, name, name),
		Fix:     fmt.Sprintf("read a column: inspect_schema shows each table's columns; if %s is a column of a subquery, rename it there", name)}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
