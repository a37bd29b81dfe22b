package mssql

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	guardmssql "github.com/sondehq/sonde/pkg/guard/mssql"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

var (
	_ engine.Cataloger = (*Engine)(nil)
	_ engine.Guarded   = (*Engine)(nil)
)

// The catalog reads (not run against a live server here: see
// docs/executor-mssql.md). Each is one batch on the read path (run: a
// snapshot transaction always rolled back, the request's timeout, the
// metered socket), bounded by catalogLimits rather than by the profile's
// result limits, which are sized for what a model reads. sys.* catalog views
// show a login only the objects it holds some permission on, so what the
// login cannot see is neither listed nor counted.

// RelationsSQL lists the database's tables (U), views (V) and external
// tables (ET, SQL Server 2016 and later; none on earlier versions) outside
// sys and INFORMATION_SCHEMA and not shipped with the server, in (schema,
// name) order.
const RelationsSQL = `SELECT s.name AS schema_name, o.name AS name, RTRIM(o.type) AS type
  FROM sys.objects AS o
  JOIN sys.schemas AS s ON s.schema_id = o.schema_id
 WHERE o.type IN ('U', 'V', 'ET') AND o.is_ms_shipped = 0
   AND s.name NOT IN (N'sys', N'INFORMATION_SCHEMA')
 ORDER BY s.name, o.name`

// StatisticsSource names where Describe's estimates come from.
const StatisticsSource = "sys.partitions row counts"

// CatalogMaxRows bounds the rows of one catalog statement: a relation's
// columns or key columns, for up to contracts.DefaultInventoryObjects
// relations.
const CatalogMaxRows = 1 << 20

// catalogRequest is req with the catalog's bounds: CatalogMaxRows rows and
// the operation's memory, refused (never truncated: a partial catalog must
// not pass for a whole one).
func (e *Engine) catalogRequest(req engine.Request) engine.Request {
	return engine.Request{Profile: req.Profile, Timeout: req.Timeout,
		Limits: rowset.Limits{MaxRows: CatalogMaxRows, MaxBytes: int(min(e.opMem, math.MaxInt32))}}
}

// catalogRead runs one composed catalog statement on the read path.
func (e *Engine) catalogRead(ctx context.Context, req engine.Request, stmt string, cat *engine.Catalog) ([][]any, error) {
	res, err := e.run(ctx, e.l, e.catalogRequest(req), stmt, nil)
	cat.SQL = append(cat.SQL, stmt)
	cat.Statements += res.Statements
	cat.Duration += res.Duration
	if err != nil {
		return nil, err
	}
	if res.Rows == nil {
		return nil, nil
	}
	return res.Rows.Rows, nil
}

// Guard returns the T-SQL reader and the login's policy.
func (e *Engine) Guard(ctx context.Context) (guard.Reader, guard.Policy, error) {
	return guardmssql.Reader{}, e.policy(e.l), nil
}

// canRead reports whether a policy allows schema.name, by the rule a read is
// held to (case-insensitive names; a name that resolves to SQL Server's own
// catalogs only when a pattern names it).
func canRead(pol guard.Policy) func(schema, name string) bool {
	return func(schema, name string) bool {
		s, system := guardmssql.SystemSchema(schema, name)
		return pol.CanRead(guard.NamesFold, guard.Table{Schema: s, Name: name, System: system})
	}
}

// Relations lists the database's tables, views and external tables in one
// statement (RelationsSQL); those the readable patterns do not allow are
// counted, never named. Errors as for Read.
func (e *Engine) Relations(ctx context.Context, req engine.Request) (engine.Catalog, error) {
	var cat engine.Catalog
	rows, err := e.catalogRead(ctx, req, RelationsSQL, &cat)
	if err != nil {
		return cat, err
	}
	cat.Relations, cat.Unreadable = relationsFrom(rows, canRead(e.policy(e.l)))
	return cat, nil
}

// relationsFrom maps the rows of RelationsSQL (schema, name, type) to
// relations, leaving out and counting those readable refuses.
func relationsFrom(rows [][]any, readable func(schema, name string) bool) ([]contracts.Relation, int) {
	var (
		rels       []contracts.Relation
		unreadable int
	)
	for _, row := range rows {
		schema, name, typ := text(row[0]), text(row[1]), text(row[2])
		if !readable(schema, name) {
			unreadable++
			continue
		}
		rels = append(rels, contracts.Relation{Schema: schema, Name: name, Kind: relationKind(typ), EngineKind: typ})
	}
	return rels, unreadable
}

// relationKind maps a sys.objects type to the shared vocabulary.
func relationKind(typ string) contracts.RelationKind {
	switch strings.TrimSpace(typ) {
	case "V":
		return contracts.RelationView
	case "ET":
		return contracts.RelationForeignTable
	}
	return contracts.RelationTable
}

// Describe fills in rels with two statements, whatever their number
// (DescribeSQL): columns, row counts from sys.partitions, primary keys,
// unique constraints, foreign keys and indexes. A relation the readable
// patterns do not allow is dropped and counted; one that no longer exists
// is dropped; a foreign key to a relation the patterns do not allow (or the
// login cannot see) is left out, so that it is never named. Errors as for
// Read; more than contracts.DefaultInventoryObjects relations is refused
// bad_request.
func (e *Engine) Describe(ctx context.Context, req engine.Request, rels []contracts.Relation) (engine.Catalog, error) {
	cat := engine.Catalog{StatisticsSource: StatisticsSource}
	if ref := engine.DescribeBound(rels); ref != nil {
		return cat, ref
	}
	readable := canRead(e.policy(e.l))
	want := make([]contracts.Relation, 0, len(rels))
	for _, r := range rels {
		switch {
		case !readable(r.Schema, r.Name):
			cat.Unreadable++
		case !strings.ContainsRune(r.Schema+r.Name, 0): // no such name can exist
			want = append(want, r)
		}
	}
	if len(want) == 0 {
		return cat, nil
	}
	columnsSQL, keysSQL := DescribeSQL(want)
	cols, err := e.catalogRead(ctx, req, columnsSQL, &cat)
	if err != nil {
		return cat, err
	}
	keys, err := e.catalogRead(ctx, req, keysSQL, &cat)
	if err != nil {
		return cat, err
	}
	cat.Relations = describeFrom(len(want), cols, keys, readable)
	return cat, nil
}

// DescribeSQL composes Describe's two statements for want: the columns
// (with the kind, and the row count of a table: SUM(rows) of its heap or
// clustered index partitions), and the key columns of its primary key,
// unique constraints, indexes and foreign keys. want is written into each as
// a table of (position, schema, name) N'…' literals; names compare as the
// database's collation compares them, as SQL Server resolves them.
func DescribeSQL(want []contracts.Relation) (columns, keys string) {
	var w strings.Builder
	w.WriteString("WITH want (i, s, n) AS (SELECT i, s, n FROM (VALUES")
	for i, r := range want {
		if i > 0 {
			w.WriteString(",")
		}
		fmt.Fprintf(&w, "\n  (%d, %s, %s)", i+1, quote(r.Schema), quote(r.Name))
	}
	w.WriteString(`
) AS v (i, s, n)),
rel AS (
  SELECT w.i, s.name AS schema_name, o.name, o.object_id, RTRIM(o.type) AS type
    FROM want AS w
    JOIN sys.schemas AS s ON s.name = w.s
    JOIN sys.objects AS o ON o.schema_id = s.schema_id AND o.name = w.n
   WHERE o.type IN ('U', 'V', 'ET') AND o.is_ms_shipped = 0
)
`)
	head := w.String()
	columns = head + `SELECT r.i, r.schema_name, r.name, r.type, c.name AS column_name, TYPE_NAME(c.user_type_id) AS type_name,
       c.max_length, c.precision, c.scale, c.is_nullable, p.row_count
  FROM rel AS r
  LEFT JOIN sys.columns AS c ON c.object_id = r.object_id
  LEFT JOIN (SELECT object_id, SUM(rows) AS row_count FROM sys.partitions WHERE index_id IN (0, 1) GROUP BY object_id) AS p
    ON p.object_id = r.object_id AND r.type = 'U'
 ORDER BY r.i, c.column_id`
	keys = head + `SELECT r.i, CASE WHEN ix.is_primary_key = 1 THEN 'PK' WHEN ix.is_unique_constraint = 1 THEN 'UQ'
                   WHEN ix.is_unique = 1 THEN 'UX' ELSE 'IX' END AS kind,
       ix.name, CASE WHEN ic.key_ordinal > 0 THEN ic.key_ordinal ELSE ic.index_column_id END AS ord,
       COL_NAME(ic.object_id, ic.column_id) AS column_name,
       CAST(NULL AS sysname) AS ref_schema, CAST(NULL AS sysname) AS ref_name, CAST(NULL AS sysname) AS ref_column
  FROM rel AS r
  JOIN sys.indexes AS ix ON ix.object_id = r.object_id
  JOIN sys.index_columns AS ic ON ic.object_id = ix.object_id AND ic.index_id = ix.index_id
 WHERE ix.type > 0 AND ix.is_hypothetical = 0 AND (ic.key_ordinal > 0 OR ix.type IN (5, 6))
UNION ALL
SELECT r.i, 'FK', fk.name, fkc.constraint_column_id, COL_NAME(fkc.parent_object_id, fkc.parent_column_id),
       OBJECT_SCHEMA_NAME(fkc.referenced_object_id), OBJECT_NAME(fkc.referenced_object_id),
       COL_NAME(fkc.referenced_object_id, fkc.referenced_column_id)
  FROM rel AS r
  JOIN sys.foreign_keys AS fk ON fk.parent_object_id = r.object_id
  JOIN sys.foreign_key_columns AS fkc ON fkc.constraint_object_id = fk.object_id
 ORDER BY 1, 2, 3, 4`
	return columns, keys
}

// describeFrom builds the described relations from the rows of DescribeSQL's
// statements, whose first column is the 1-based position in the n relations
// asked for, in that order. A foreign key whose referenced relation readable
// refuses, or that the login cannot see (its names NULL), is left out.
func describeFrom(n int, colRows, keyRows [][]any, readable func(schema, name string) bool) []contracts.Relation {
	out := make([]*contracts.Relation, n)
	for _, row := range colRows {
		i, ok := position(row[0], n)
		if !ok {
			continue
		}
		r := out[i]
		if r == nil {
			typ := text(row[3])
			r = &contracts.Relation{Schema: text(row[1]), Name: text(row[2]), Kind: relationKind(typ), EngineKind: typ,
				Columns: []contracts.RelationColumn{}}
			if rows, ok := integer(row[10]); ok {
				r.Stats = &contracts.RelationStats{Rows: float64(rows)}
			}
			out[i] = r
		}
		if row[4] == nil {
			continue // no column the login may see
		}
		maxLen, _ := integer(row[6])
		prec, _ := integer(row[7])
		scale, _ := integer(row[8])
		nullable, _ := row[9].(bool)
		r.Columns = append(r.Columns, contracts.RelationColumn{Name: text(row[4]),
			Type: columnType(text(row[5]), maxLen, prec, scale), Nullable: nullable})
	}

	// Key rows come ordered by (position, kind, name, ordinal): one key's
	// columns are consecutive.
	type key struct {
		i              int
		kind, name     string
		cols, refCols  []string
		refSchema, ref string
		hidden         bool // a referenced name the login cannot see
	}
	var keys []*key
	for _, row := range keyRows {
		i, ok := position(row[0], n)
		if !ok || out[i] == nil {
			continue
		}
		kind, name := text(row[1]), text(row[2])
		k := (*key)(nil)
		if len(keys) > 0 {
			if last := keys[len(keys)-1]; last.i == i && last.kind == kind && last.name == name {
				k = last
			}
		}
		if k == nil {
			k = &key{i: i, kind: kind, name: name}
			keys = append(keys, k)
		}
		k.cols = append(k.cols, text(row[4]))
		if kind == "FK" {
			if row[5] == nil || row[6] == nil || row[7] == nil {
				k.hidden = true
			}
			k.refSchema, k.ref = text(row[5]), text(row[6])
			k.refCols = append(k.refCols, text(row[7]))
		}
	}
	for _, k := range keys {
		r := out[k.i]
		switch k.kind {
		case "PK":
			r.PrimaryKey = k.cols
		case "UQ":
			r.Unique = append(r.Unique, k.cols)
		case "IX", "UX":
			r.Indexes = append(r.Indexes, contracts.Index{Name: k.name, Unique: k.kind == "UX", Columns: k.cols})
		case "FK":
			if k.hidden || !readable(k.refSchema, k.ref) {
				continue
			}
			r.ForeignKeys = append(r.ForeignKeys, contracts.ForeignKey{Name: k.name, Columns: k.cols,
				RefSchema: k.refSchema, RefName: k.ref, RefColumns: k.refCols})
		}
	}
	rels := make([]contracts.Relation, 0, n)
	for _, r := range out {
		if r != nil {
			slices.SortStableFunc(r.Indexes, func(a, b contracts.Index) int { return strings.Compare(a.Name, b.Name) })
			rels = append(rels, *r)
		}
	}
	return rels
}

// columnType writes a column's type as T-SQL declares it: a length for the
// character and binary types (in characters for the N types, max for -1),
// precision and scale for decimal and numeric, fractional-second scale for
// the time types. Any other type, an alias type included, is its name.
func columnType(name string, maxLen, prec, scale int64) string {
	switch strings.ToLower(name) {
	case "varchar", "char", "varbinary", "binary":
		if maxLen == -1 {
			return name + "(max)"
		}
		return fmt.Sprintf("%s(%d)", name, maxLen)
	case "nvarchar", "nchar":
		if maxLen == -1 {
			return name + "(max)"
		}
		return fmt.Sprintf("%s(%d)", name, maxLen/2)
	case "decimal", "numeric":
		return fmt.Sprintf("%s(%d,%d)", name, prec, scale)
	case "datetime2", "datetimeoffset", "time":
		return fmt.Sprintf("%s(%d)", name, scale)
	}
	return name
}

// position reads the 1-based position column of a Describe row as an index
// into the relations asked for.
func position(v any, n int) (int, bool) {
	i, ok := integer(v)
	if !ok || i < 1 || i > int64(n) {
		return 0, false
	}
	return int(i - 1), true
}

// integer reads an integer column as value converted it.
func integer(v any) (int64, bool) {
	i, ok := v.(int64)
	return i, ok
}

func text(v any) string {
	s, _ := v.(string)
	return s
}
