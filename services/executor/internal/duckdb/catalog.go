package duckdb

import (
	"context"
	"strings"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

var (
	_ engine.Cataloger = (*Engine)(nil)
	_ engine.Guarded   = (*Engine)(nil)
)

// The catalog reads. Each runs as a read does (engine.run with the bounded
// wrapper of bounded.go, under the request's timeout), bounded by
// catalogLimits rather than by the profile's result limits, which are sized
// for what a model reads. Names are matched case-insensitively, as DuckDB
// resolves them; the list of wanted relations is bound as two VARCHAR[]
// parameters ($1 schemas, $2 names), so Describe sends the same two
// statements for one relation or five thousand.

// RelationsSQL lists every table and view of the file's own catalog
// (DuckDB's internal ones and the temp catalog left out) in (schema, name)
// order, with the word information_schema.tables uses for its kind.
const RelationsSQL = `SELECT schema_name, name, kind FROM (
  SELECT schema_name, table_name AS name, 'BASE TABLE' AS kind
  FROM duckdb_tables() WHERE database_name = current_database() AND NOT internal
  UNION ALL
  SELECT schema_name, view_name, 'VIEW'
  FROM duckdb_views() WHERE database_name = current_database() AND NOT internal
) ORDER BY schema_name, name`

// wantSQL is the relations a Describe statement reads: the i-th schema and
// name of the two list parameters, with i.
const wantSQL = `want AS (
  SELECT unnest($1::VARCHAR[]) AS s, unnest($2::VARCHAR[]) AS n, generate_subscripts($1::VARCHAR[], 1) AS i
)`

// ColumnsSQL reads, for each wanted relation that exists, its stored names,
// its kind, DuckDB's estimated row count (tables only) and its columns in
// their order. A relation with no column DuckDB can list (a view whose
// binding fails) still has one row, its column fields NULL.
const ColumnsSQL = `WITH ` + wantSQL + `, rel AS (
  SELECT schema_name, table_name AS name, 'BASE TABLE' AS kind, estimated_size
  FROM duckdb_tables() WHERE database_name = current_database() AND NOT internal
  UNION ALL
  SELECT schema_name, view_name, 'VIEW', NULL
  FROM duckdb_views() WHERE database_name = current_database() AND NOT internal
)
SELECT w.i, r.schema_name, r.name, r.kind, r.estimated_size, c.column_name, c.data_type, c.is_nullable
FROM want w
JOIN rel r ON lower(r.schema_name) = lower(w.s) AND lower(r.name) = lower(w.n)
LEFT JOIN duckdb_columns() c
  ON c.database_name = current_database() AND c.schema_name = r.schema_name AND c.table_name = r.name
ORDER BY w.i, c.column_index`

// KeysSQL reads the primary keys, unique constraints and foreign keys
// (duckdb_constraints) and the indexes (duckdb_indexes) of the wanted
// relations. An index's key parts come from its expressions, read as
// DuckDB's list text; where that text does not read as a list, the whole
// text stands as one part.
const KeysSQL = `WITH ` + wantSQL + `
SELECT w.i, k.constraint_type AS kind, k.constraint_name AS name, k.constraint_column_names AS cols,
       k.referenced_table AS ref_name, k.referenced_column_names AS ref_cols, NULL::BOOLEAN AS is_unique,
       k.constraint_index AS ord
FROM want w
JOIN duckdb_constraints() k
  ON k.database_name = current_database() AND lower(k.schema_name) = lower(w.s) AND lower(k.table_name) = lower(w.n)
WHERE k.constraint_type IN ('PRIMARY KEY', 'UNIQUE', 'FOREIGN KEY')
UNION ALL
SELECT w.i, 'INDEX', x.index_name, coalesce(TRY_CAST(x.expressions AS VARCHAR[]), [x.expressions]),
       NULL, NULL, x.is_unique, 0
FROM want w
JOIN duckdb_indexes() x
  ON x.database_name = current_database() AND lower(x.schema_name) = lower(w.s) AND lower(x.table_name) = lower(w.n)
ORDER BY 1, 2, 8, 3`

// StatisticsSource names where Describe's estimates come from.
const StatisticsSource = "duckdb_tables().estimated_size"

// CatalogMaxRows bounds the rows of one catalog statement: a relation's
// columns or keys, for up to contracts.DefaultInventoryObjects relations.
const CatalogMaxRows = 1 << 20

// catalogLimits bound one catalog statement: CatalogMaxRows rows and the
// memory one operation may hold, refused (never truncated: a partial
// catalog must not pass for a whole one).
func (e *Engine) catalogLimits() rowset.Limits {
	return rowset.Limits{MaxRows: CatalogMaxRows, MaxBytes: int(max(e.limit/MaxConns, 8<<20))}
}

// catalogRead runs one catalog statement on the read path.
func (e *Engine) catalogRead(ctx context.Context, timeout time.Duration, stmt string, params []any, cat *engine.Catalog) (*rowset.Set, error) {
	res, err := e.run(ctx, stmt, params, e.catalogLimits(), timeout)
	cat.SQL = append(cat.SQL, stmt)
	cat.Statements += res.Statements
	cat.Duration += res.Duration
	if err != nil {
		return nil, err
	}
	return res.Rows, nil
}

// Guard returns the engine's guard reader and the connection's policy.
func (e *Engine) Guard(ctx context.Context) (guard.Reader, guard.Policy, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, guard.Policy{}, &contracts.DBError{Class: contracts.DBUnavailable, Message: "the connection is closed"}
	}
	return e.guard, e.policy, nil
}

// readable reports whether the connection's patterns allow schema.name, by
// the rule a read is held to (DuckDB's case-insensitive names).
func (e *Engine) readable(schema, name string) bool {
	return e.policy.CanRead(guard.NamesFold, guard.Table{Schema: schema, Name: name})
}

// Relations lists the file's tables and views in one statement
// (RelationsSQL); those the readable patterns do not allow are counted,
// never named. Errors as for Read.
func (e *Engine) Relations(ctx context.Context, req engine.Request) (engine.Catalog, error) {
	var cat engine.Catalog
	set, err := e.catalogRead(ctx, req.Timeout, RelationsSQL, nil, &cat)
	if err != nil {
		return cat, err
	}
	for _, row := range set.Rows {
		schema, name, kind := text(row[0]), text(row[1]), text(row[2])
		if !e.readable(schema, name) {
			cat.Unreadable++
			continue
		}
		cat.Relations = append(cat.Relations, contracts.Relation{Schema: schema, Name: name, Kind: relationKind(kind), EngineKind: kind})
	}
	return cat, nil
}

// relationKind maps the kind word of RelationsSQL to the shared vocabulary.
func relationKind(kind string) contracts.RelationKind {
	if kind == "VIEW" {
		return contracts.RelationView
	}
	return contracts.RelationTable
}

// Describe fills in rels with two statements, whatever their number
// (ColumnsSQL, KeysSQL): columns, estimated row counts, primary keys, unique
// constraints, foreign keys and indexes. A relation the readable patterns do
// not allow is dropped and counted; one that no longer exists is dropped. A
// foreign key to a relation the patterns do not allow is left out, so that
// it is never named. Errors as for Read; more than
// contracts.DefaultInventoryObjects relations is refused bad_request.
func (e *Engine) Describe(ctx context.Context, req engine.Request, rels []contracts.Relation) (engine.Catalog, error) {
	cat := engine.Catalog{StatisticsSource: StatisticsSource}
	if ref := engine.DescribeBound(rels); ref != nil {
		return cat, ref
	}
	want := make([]contracts.Relation, 0, len(rels))
	for _, r := range rels {
		if !e.readable(r.Schema, r.Name) {
			cat.Unreadable++
			continue
		}
		want = append(want, r)
	}
	if len(want) == 0 {
		return cat, nil
	}
	schemas, names := make([]string, len(want)), make([]string, len(want))
	for i, r := range want {
		schemas[i], names[i] = r.Schema, r.Name
	}
	params := []any{schemas, names}
	cols, err := e.catalogRead(ctx, req.Timeout, ColumnsSQL, params, &cat)
	if err != nil {
		return cat, err
	}
	keys, err := e.catalogRead(ctx, req.Timeout, KeysSQL, params, &cat)
	if err != nil {
		return cat, err
	}
	cat.Relations = e.describeFrom(want, cols.Rows, keys.Rows)
	return cat, nil
}

// describeFrom builds the described relations from the rows of ColumnsSQL
// and KeysSQL, whose first column is the 1-based position in want.
func (e *Engine) describeFrom(want []contracts.Relation, colRows, keyRows [][]any) []contracts.Relation {
	out := make([]*contracts.Relation, len(want))
	for _, row := range colRows {
		i, ok := position(row[0], len(want))
		if !ok {
			continue
		}
		r := out[i]
		if r == nil {
			kind := text(row[3])
			r = &contracts.Relation{Schema: text(row[1]), Name: text(row[2]), Kind: relationKind(kind), EngineKind: kind,
				Columns: []contracts.RelationColumn{}}
			if n, ok := row[4].(int64); ok {
				r.Stats = &contracts.RelationStats{Rows: float64(n)}
			}
			out[i] = r
		}
		if row[5] == nil {
			continue // a view DuckDB cannot bind lists no columns
		}
		nullable, _ := row[7].(bool)
		r.Columns = append(r.Columns, contracts.RelationColumn{Name: text(row[5]), Type: text(row[6]), Nullable: nullable})
	}
	for _, row := range keyRows {
		i, ok := position(row[0], len(want))
		if !ok || out[i] == nil {
			continue
		}
		r := out[i]
		kind, name, cols := text(row[1]), text(row[2]), texts(row[3])
		switch kind {
		case "PRIMARY KEY":
			r.PrimaryKey = cols
		case "UNIQUE":
			r.Unique = append(r.Unique, cols)
		case "FOREIGN KEY":
			// DuckDB keeps a foreign key within its table's schema.
			ref := text(row[4])
			if !e.readable(r.Schema, ref) {
				continue
			}
			r.ForeignKeys = append(r.ForeignKeys, contracts.ForeignKey{Name: name, Columns: cols,
				RefSchema: r.Schema, RefName: ref, RefColumns: texts(row[5])})
		case "INDEX":
			unique, _ := row[6].(bool)
			parts := make([]string, len(cols))
			for j, c := range cols {
				parts[j] = indexPart(c, r.Columns)
			}
			r.Indexes = append(r.Indexes, contracts.Index{Name: name, Unique: unique, Columns: parts})
		}
	}
	rels := make([]contracts.Relation, 0, len(out))
	for _, r := range out {
		if r != nil {
			rels = append(rels, *r)
		}
	}
	return rels
}

// indexPart reads one of an index's key parts as DuckDB writes it: a column
// (bare, or "quoted" where its name needs it) becomes the column's name;
// anything else is an expression, kept as DuckDB wrote it.
func indexPart(part string, cols []contracts.RelationColumn) string {
	name, ok := identifier(part)
	if !ok {
		return part
	}
	for _, c := range cols {
		if strings.EqualFold(c.Name, name) {
			return c.Name
		}
	}
	return part
}

// identifier reads s as one SQL identifier: bare letters, digits and
// underscores, or double-quoted with "" for a quote.
func identifier(s string) (string, bool) {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		inner := s[1 : len(s)-1]
		if strings.Count(inner, `"`) != 2*strings.Count(inner, `""`) {
			return "", false
		}
		return strings.ReplaceAll(inner, `""`, `"`), true
	}
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return "", false
	}
	for _, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return "", false
		}
	}
	return s, true
}

// position reads the 1-based position column of a Describe row as an index
// into want.
func position(v any, n int) (int, bool) {
	i, ok := v.(int64)
	if !ok || i < 1 || i > int64(n) {
		return 0, false
	}
	return int(i - 1), true
}

func text(v any) string {
	s, _ := v.(string)
	return s
}

func texts(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		out = append(out, text(x))
	}
	return out
}
