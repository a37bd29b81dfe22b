package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	pgguard "github.com/sondehq/sonde/pkg/guard/postgres"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

var (
	_ engine.Cataloger = (*Engine)(nil)
	_ engine.Guarded   = (*Engine)(nil)
)

// RelationsSQL lists the relations of the connection's database: tables
// (relkind r), partitioned tables (p), views (v), materialized views (m) and
// foreign tables (f), outside information_schema and every pg_ schema
// (pg_catalog, pg_toast, pg_temp_N, …), in byte order of the names as
// stored. Sequences, indexes, composite types and TOAST tables are not
// relations a statement reads.
const RelationsSQL = `SELECT n.nspname::text, c.relname::text, c.relkind::text
  FROM pg_catalog.pg_class c
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
   AND n.nspname <> 'information_schema' AND n.nspname !~ '^pg_'
 ORDER BY n.nspname::text COLLATE "C", c.relname::text COLLATE "C"`

// DescribeSQL describes the relations named by $1 (schemas) and $2 (names),
// paired by position, in one statement: one row per relation that still
// exists, with its position in the arrays (1-based), its relkind, its
// estimated row count, whether the server ever counted it, and four JSON
// arrays of arrays (NULL when empty), so that a capture costs one
// statement whatever the number of relations:
//
//   - columns: [name, type as format_type writes it, nullable], by attnum;
//   - constraints: [contype, name, columns, referenced schema, referenced
//     table, referenced columns] for the primary key (p), unique
//     constraints (u) and foreign keys (f), columns in the constraint's
//     order. A foreign key to a partitioned table is stored once more per
//     partition of the referenced table, as a child of the constraint on
//     the same table: those copies are left out;
//   - indexes: [name, unique, key columns], each key column by name or, for
//     an expression, as pg_get_indexdef writes it (INCLUDE columns are not
//     keys and are left out);
//   - statistics: [column, null_frac, n_distinct] from pg_stats, which shows
//     only the columns the role may SELECT. A partitioned table's
//     statistics are those of the whole tree (inherited); a plain table's
//     its own rows, as reltuples counts them.
//
// "counted" is the evidence behind reltuples (see relationStats).
const DescribeSQL = `WITH want AS (
  SELECT w.nsp, w.rel, w.ord
    FROM ROWS FROM (pg_catalog.unnest($1::text[]), pg_catalog.unnest($2::text[])) WITH ORDINALITY AS w(nsp, rel, ord)
), rel AS (
  SELECT w.ord, c.oid, c.relkind, c.reltuples, c.relpages, n.nspname, c.relname
    FROM want w
    JOIN pg_catalog.pg_namespace n ON n.nspname = w.nsp
    JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = w.rel
   WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
     AND n.nspname <> 'information_schema' AND n.nspname !~ '^pg_'
)
SELECT r.ord, r.relkind::text, r.reltuples::float8,
       (r.relpages <> 0
        OR pg_catalog.pg_stat_get_last_analyze_time(r.oid) IS NOT NULL
        OR pg_catalog.pg_stat_get_last_autoanalyze_time(r.oid) IS NOT NULL
        OR pg_catalog.pg_stat_get_last_vacuum_time(r.oid) IS NOT NULL
        OR pg_catalog.pg_stat_get_last_autovacuum_time(r.oid) IS NOT NULL) AS counted,
       (SELECT pg_catalog.json_agg(pg_catalog.json_build_array(a.attname,
                 pg_catalog.format_type(a.atttypid, a.atttypmod), NOT a.attnotnull) ORDER BY a.attnum)
          FROM pg_catalog.pg_attribute a
         WHERE a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped)::text,
       (SELECT pg_catalog.json_agg(pg_catalog.json_build_array(k.contype, k.conname,
                 ARRAY(SELECT a.attname FROM pg_catalog.unnest(k.conkey) WITH ORDINALITY AS u(attnum, i)
                         JOIN pg_catalog.pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.attnum
                        ORDER BY u.i),
                 fn.nspname, fc.relname,
                 ARRAY(SELECT a.attname FROM pg_catalog.unnest(k.confkey) WITH ORDINALITY AS u(attnum, i)
                         JOIN pg_catalog.pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.attnum
                        ORDER BY u.i))
               ORDER BY k.contype, k.conname)
          FROM pg_catalog.pg_constraint k
          LEFT JOIN pg_catalog.pg_class fc ON fc.oid = k.confrelid
          LEFT JOIN pg_catalog.pg_namespace fn ON fn.oid = fc.relnamespace
         WHERE k.conrelid = r.oid AND k.contype IN ('p', 'u', 'f')
           AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint pk
                            WHERE pk.oid = k.conparentid AND pk.conrelid = k.conrelid))::text,
       (SELECT pg_catalog.json_agg(pg_catalog.json_build_array(ic.relname, i.indisunique,
                 ARRAY(SELECT CASE WHEN i.indkey[g.k - 1] <> 0 THEN a.attname::text
                                   ELSE pg_catalog.pg_get_indexdef(i.indexrelid, g.k, true) END
                         FROM pg_catalog.generate_series(1, i.indnkeyatts::int) AS g(k)
                         LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[g.k - 1]
                        ORDER BY g.k))
               ORDER BY ic.relname)
          FROM pg_catalog.pg_index i
          JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid
         WHERE i.indrelid = r.oid)::text,
       (SELECT pg_catalog.json_agg(pg_catalog.json_build_array(s.attname, s.null_frac, s.n_distinct))
          FROM pg_catalog.pg_stats s
         WHERE s.schemaname = r.nspname AND s.tablename = r.relname
           AND s.inherited = (r.relkind = 'p'))::text
  FROM rel r
 ORDER BY r.ord`

// StatisticsSource names where Describe's estimates come from.
const StatisticsSource = "pg_class.reltuples and pg_stats (estimates from the last ANALYZE, VACUUM or CREATE INDEX)"

// catalogLimits bound what one catalog statement may return. The rows of
// a listing are names and those of a description are one per relation
// asked for (at most contracts.DefaultInventoryObjects), so these bounds
// are generous; past them the read fails as too large rather than return
// a catalog silently cut short. One row is still bounded by the engine's
// operation memory (bodyLimit).
var catalogLimits = rowset.Limits{MaxRows: 1 << 20, MaxBytes: 256 << 20}

// kinds maps pg_class.relkind to the relation kinds.
var kinds = map[string]contracts.RelationKind{
	"r": contracts.RelationTable,
	"p": contracts.RelationPartitionedTable,
	"v": contracts.RelationView,
	"m": contracts.RelationMaterializedView,
	"f": contracts.RelationForeignTable,
}

// Guard returns the reader that parses PostgreSQL's dialect and the
// connection's policy, the two Read applies to every statement.
func (e *Engine) Guard(context.Context) (guard.Reader, guard.Policy, error) {
	return e.reader, e.policy, nil
}

// readable reports whether the connection's readable patterns admit the
// relation schema.name. The catalog's names are exact: "GENRE" is not
// public.genre.
func (e *Engine) readable(schema, name string) bool {
	p := guard.Policy{Readable: e.policy.Readable, DefaultSchema: e.policy.DefaultSchema}
	return p.CanRead(guard.NamesExact, guard.Table{Schema: schema, Name: name, System: pgguard.SystemSchema(schema)})
}

// Relations runs RelationsSQL (one statement, through run: a read-only
// transaction under req.Timeout) and keeps the relations the readable
// patterns allow, counting the others.
func (e *Engine) Relations(ctx context.Context, req engine.Request) (engine.Catalog, error) {
	res, err := e.run(ctx, RelationsSQL, nil, catalogRequest(req))
	cat := engine.Catalog{SQL: []string{RelationsSQL}, Duration: res.Duration, Statements: res.Statements}
	if err != nil {
		return cat, err
	}
	cat.Relations = make([]contracts.Relation, 0, len(res.Rows.Rows))
	for _, row := range res.Rows.Rows {
		schema, _ := row[0].(string)
		name, _ := row[1].(string)
		relkind, _ := row[2].(string)
		if !e.readable(schema, name) {
			cat.Unreadable++
			continue
		}
		cat.Relations = append(cat.Relations, contracts.Relation{
			Schema: schema, Name: name, Kind: kinds[relkind], EngineKind: relkind})
	}
	return cat, nil
}

// catalogRequest is req with the catalog's own bounds: the caller's
// result limits are for what it renders, not for what the engine reads.
func catalogRequest(req engine.Request) engine.Request {
	r := req
	r.SQL, r.Params, r.Limits = "", nil, catalogLimits
	return r
}

// Describe runs DescribeSQL once for every relation of rels the readable
// patterns allow (the others are counted in Unreadable and never sent),
// and returns them in the order given, each once; relations that no longer
// exist, or are not relations Relations lists, are dropped. Nothing is
// sent when nothing is left to describe.
func (e *Engine) Describe(ctx context.Context, req engine.Request, rels []contracts.Relation) (engine.Catalog, error) {
	cat := engine.Catalog{StatisticsSource: StatisticsSource}
	var schemas, names []string
	seen := make(map[[2]string]bool, len(rels))
	for _, r := range rels {
		key := [2]string{r.Schema, r.Name}
		if seen[key] {
			continue
		}
		seen[key] = true
		if !e.readable(r.Schema, r.Name) {
			cat.Unreadable++
			continue
		}
		schemas, names = append(schemas, r.Schema), append(names, r.Name)
	}
	if len(names) == 0 {
		return cat, nil
	}
	res, err := e.run(ctx, DescribeSQL, []any{schemas, names}, catalogRequest(req))
	cat.SQL, cat.Duration, cat.Statements = []string{DescribeSQL}, res.Duration, res.Statements
	if err != nil {
		return cat, err
	}
	cat.Relations = make([]contracts.Relation, 0, len(res.Rows.Rows))
	for _, row := range res.Rows.Rows {
		rel, err := describedRow(row, schemas, names)
		if err != nil {
			return cat, &contracts.DBError{Class: contracts.DBOther, Message: "reading the catalog's description: " + err.Error()}
		}
		cat.Relations = append(cat.Relations, rel)
	}
	return cat, nil
}

// describedRow reads one row of DescribeSQL into a relation.
func describedRow(row []any, schemas, names []string) (contracts.Relation, error) {
	var rel contracts.Relation
	if len(row) != 8 {
		return rel, fmt.Errorf("%d columns, want 8", len(row))
	}
	ord, ok := row[0].(int64)
	if !ok || ord < 1 || int(ord) > len(names) {
		return rel, fmt.Errorf("position %v out of range", row[0])
	}
	relkind, _ := row[1].(string)
	rel = contracts.Relation{Schema: schemas[ord-1], Name: names[ord-1], Kind: kinds[relkind], EngineKind: relkind,
		Columns: []contracts.RelationColumn{}}
	if err := eachTuple(row[4], func(t []json.RawMessage) error {
		var c contracts.RelationColumn
		if err := fields(t, &c.Name, &c.Type, &c.Nullable); err != nil {
			return err
		}
		rel.Columns = append(rel.Columns, c)
		return nil
	}); err != nil {
		return rel, fmt.Errorf("%s columns: %w", rel.QualifiedName(), err)
	}
	if err := eachTuple(row[5], func(t []json.RawMessage) error {
		var (
			contype, name, refSchema, refName string
			cols, refCols                     []string
		)
		if err := fields(t, &contype, &name, &cols, &refSchema, &refName, &refCols); err != nil {
			return err
		}
		switch contype {
		case "p":
			rel.PrimaryKey = cols
		case "u":
			rel.Unique = append(rel.Unique, cols)
		case "f":
			rel.ForeignKeys = append(rel.ForeignKeys, contracts.ForeignKey{Name: name, Columns: cols,
				RefSchema: refSchema, RefName: refName, RefColumns: refCols})
		}
		return nil
	}); err != nil {
		return rel, fmt.Errorf("%s constraints: %w", rel.QualifiedName(), err)
	}
	if err := eachTuple(row[6], func(t []json.RawMessage) error {
		var ix contracts.Index
		if err := fields(t, &ix.Name, &ix.Unique, &ix.Columns); err != nil {
			return err
		}
		rel.Indexes = append(rel.Indexes, ix)
		return nil
	}); err != nil {
		return rel, fmt.Errorf("%s indexes: %w", rel.QualifiedName(), err)
	}
	reltuples, _ := row[2].(float64) // "NaN" is not a count: read as 0, then no statistics
	counted, _ := row[3].(bool)
	rel.Stats = relationStats(reltuples, counted)
	if rel.Stats == nil {
		return rel, nil
	}
	if err := eachTuple(row[7], func(t []json.RawMessage) error {
		var (
			col                 string
			nullFrac, nDistinct *float64
		)
		if err := fields(t, &col, &nullFrac, &nDistinct); err != nil {
			return err
		}
		if rel.Stats.Columns == nil {
			rel.Stats.Columns = map[string]contracts.ColumnStats{}
		}
		rel.Stats.Columns[col] = contracts.ColumnStats{NullFraction: nullFrac, Distinct: distinct(nDistinct, reltuples)}
		return nil
	}); err != nil {
		return rel, fmt.Errorf("%s statistics: %w", rel.QualifiedName(), err)
	}
	return rel, nil
}

// relationStats decides whether the server holds an estimate of a
// relation's rows, and never guesses one:
//
//   - reltuples < 0: never counted. PostgreSQL 14 and later create every
//     relation with -1 and only VACUUM, ANALYZE or CREATE INDEX replace it;
//     views keep it for good;
//   - reltuples = 0 with relpages = 0 and no VACUUM or ANALYZE on record
//     (pg_stat_get_last_*_time): never counted either. Before 14 this is
//     how every relation starts; an empty table that was analysed has a
//     time on record (unless the statistics were reset since — it then
//     reads as never counted, the cautious side);
//   - anything else is the server's estimate (a partitioned table's is the
//     sum ANALYZE computed over its partitions).
func relationStats(reltuples float64, counted bool) *contracts.RelationStats {
	if reltuples < 0 || reltuples == 0 && !counted {
		return nil
	}
	return &contracts.RelationStats{Rows: reltuples}
}

// distinct converts pg_stats.n_distinct to a count: a positive value is the
// count; a negative one is minus the count divided by the rows (-1: every
// row distinct), so the count is -n_distinct × reltuples; zero means
// unknown.
func distinct(nDistinct *float64, reltuples float64) *float64 {
	if nDistinct == nil || *nDistinct == 0 {
		return nil
	}
	d := *nDistinct
	if d < 0 {
		d = -d * reltuples
	}
	return &d
}

// eachTuple calls f with each inner array of a JSON array of arrays held in
// v (a string, or nil for none).
func eachTuple(v any, f func([]json.RawMessage) error) error {
	if v == nil {
		return nil
	}
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("value of type %T, want JSON text", v)
	}
	var tuples [][]json.RawMessage
	if err := json.Unmarshal([]byte(s), &tuples); err != nil {
		return err
	}
	for _, t := range tuples {
		if err := f(t); err != nil {
			return err
		}
	}
	return nil
}

// fields decodes the elements of a JSON array into dst, in order.
func fields(t []json.RawMessage, dst ...any) error {
	if len(t) != len(dst) {
		return fmt.Errorf("%d fields, want %d", len(t), len(dst))
	}
	for i, d := range dst {
		if err := json.Unmarshal(t[i], d); err != nil {
			return fmt.Errorf("field %d: %w", i+1, err)
		}
	}
	return nil
}
