package postgres

import (
	"context"
	"errors"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

var _ engine.Profiler = (*Engine)(nil)

// noEquality lists the built-in types a distinct count cannot be taken of:
// count(DISTINCT …) needs an ordering operator, and these have none (json,
// xml, the geometric types, snapshots). One such column would otherwise
// fail the whole aggregate ("could not identify an equality operator for
// type json") and take every other column's counts with it.
var noEquality = map[string]bool{
	"json": true, "xml": true, "point": true, "line": true, "lseg": true, "box": true,
	"path": true, "polygon": true, "circle": true, "txid_snapshot": true, "pg_snapshot": true,
	"jsonpath": true, "refcursor": true, "xid": true, "cid": true, "aclitem": true,
}

// ordered lists the built-in types known to have an ordering operator:
// after a profile failed for want of one (a domain over json, an
// extension's or a user's type), only these keep their distinct count.
var ordered = map[string]bool{
	"smallint": true, "integer": true, "bigint": true, "numeric": true, "real": true, "double precision": true,
	"text": true, "character varying": true, "character": true, "name": true, "citext": true, "boolean": true,
	"date": true, "time without time zone": true, "time with time zone": true, "timestamp without time zone": true,
	"timestamp with time zone": true, "interval": true, "uuid": true, "bytea": true, "jsonb": true, "inet": true,
	"cidr": true, "macaddr": true, "macaddr8": true, "money": true, "bit": true, "bit varying": true, "oid": true,
	"tsvector": true, "tsquery": true, "pg_lsn": true, "xid8": true,
}

// baseType is a declared type without its modifiers and array brackets
// ("timestamp(3) without time zone[]" → "timestamp without time zone").
func baseType(typ string) string {
	typ = strings.TrimSuffix(typ, "[]")
	for {
		i := strings.IndexByte(typ, '(')
		j := strings.IndexByte(typ, ')')
		if i < 0 || j < i {
			return strings.TrimSpace(typ)
		}
		typ = strings.TrimSpace(typ[:i]) + typ[j+1:]
	}
}

// textTypes are the built-in character types the shape tests apply to.
var textTypes = []string{"text", "character varying", "character", "varchar", "char", "name", "citext"}

// Dialect is how PostgreSQL writes a profile: every function and operator
// named in pg_catalog, so a same-named one in another schema is never
// called, and text columns compared as pg_catalog.text.
var Dialect = engine.Dialect{
	Quote: engine.QuoteDouble,
	Count: "pg_catalog.count",
	NoDistinct: func(typ string) string {
		if noEquality[baseType(typ)] {
			return "type " + typ + " has no equality operator to count distinct values by"
		}
		return ""
	},
	Text: func(typ string) bool {
		base := typ
		if i := strings.IndexByte(base, '('); i >= 0 {
			base = base[:i]
		}
		for _, t := range textTypes {
			if base == t {
				return true
			}
		}
		return false
	},
	EmailLike: func(col string) string {
		return col + "::pg_catalog.text OPERATOR(pg_catalog.~~) '" + engine.EmailPattern + "'"
	},
	DigitRun: func(col string) string {
		return col + "::pg_catalog.text OPERATOR(pg_catalog.~) '[0-9]{9,}'"
	},
	Sample: engine.SampleLimit,
}

// Profile runs the composed profile statement (engine.ComposeProfile) as a
// catalog read is run: one statement inside BEGIN READ ONLY under the
// request's timeout, always rolled back.
func (e *Engine) Profile(ctx context.Context, req engine.Request, p engine.ProfileRequest) (engine.ProfileResult, error) {
	var sample int64
	if _, large := e.policy.LargeColumn(guard.NamesExact, guard.Table{Schema: p.Relation.Schema, Name: p.Relation.Name}); large {
		sample = engine.ProfileSampleRows
	}
	plan := engine.ComposeProfile(Dialect, p, sample)
	out, err := plan.Read(e.run(ctx, plan.SQL, nil, catalogRequest(req)))
	var dbErr *contracts.DBError
	if !errors.As(err, &dbErr) || dbErr.Class != contracts.DBMissingObject || !plan.Distinct() {
		return out, err
	}
	// A type the lists above do not know has no ordering operator (42883):
	// once more, with distinct counts only of the types known to have one,
	// rather than lose every column's counts.
	cautious := Dialect
	cautious.NoDistinct = func(typ string) string {
		if why := Dialect.NoDistinct(typ); why != "" {
			return why
		}
		if !ordered[baseType(typ)] {
			return "PostgreSQL could not count distinct values of every column's type; type " + typ + " is not one known to have an ordering operator"
		}
		return ""
	}
	plan = engine.ComposeProfile(cautious, p, sample)
	again, err := plan.Read(e.run(ctx, plan.SQL, nil, catalogRequest(req)))
	again.SQL = out.SQL + ";\n" + again.SQL
	again.Statements += out.Statements
	again.Duration += out.Duration
	return again, err
}

// UnprofilableSQL lists the sequences, the objects PostgreSQL names beside
// its relations that hold no rows to profile, outside information_schema
// and the pg_ schemas.
const UnprofilableSQL = `SELECT n.nspname::text, c.relname::text, 'sequence'
  FROM pg_catalog.pg_class c
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind = 'S'
   AND n.nspname <> 'information_schema' AND n.nspname !~ '^pg_'
 ORDER BY n.nspname::text COLLATE "C", c.relname::text COLLATE "C"`

// Unprofilable lists the readable sequences (one statement).
func (e *Engine) Unprofilable(ctx context.Context, req engine.Request) (engine.Catalog, error) {
	res, err := e.run(ctx, UnprofilableSQL, nil, catalogRequest(req))
	cat := engine.Catalog{SQL: []string{UnprofilableSQL}, Duration: res.Duration, Statements: res.Statements}
	if err != nil {
		return cat, err
	}
	for _, row := range res.Rows.Rows {
		schema, _ := row[0].(string)
		name, _ := row[1].(string)
		kind, _ := row[2].(string)
		if !e.readable(schema, name) {
			cat.Unreadable++
			continue
		}
		cat.Relations = append(cat.Relations, contracts.Relation{Schema: schema, Name: name, EngineKind: kind})
	}
	return cat, nil
}
