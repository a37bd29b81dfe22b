package duckdb

import (
	"context"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

var _ engine.Profiler = (*Engine)(nil)

// Dialect is how DuckDB writes a profile. DuckDB compares every type it
// stores, nested ones included, so every column gets a distinct count; the
// shape tests apply to VARCHAR columns, the digit run with
// regexp_matches.
var Dialect = engine.Dialect{
	Quote:      engine.QuoteDouble,
	Count:      "count",
	NoDistinct: func(string) string { return "" },
	Text: func(typ string) bool {
		t := strings.ToUpper(typ)
		return t == "VARCHAR" || strings.HasPrefix(t, "VARCHAR(")
	},
	EmailLike: func(col string) string { return col + " LIKE '" + engine.EmailPattern + "'" },
	DigitRun:  func(col string) string { return "regexp_matches(" + col + ", '[0-9]{9,}')" },
	Sample:    engine.SampleLimit,
}

// Profile runs the composed profile statement as a catalog read is run
// (run: DuckDB's prepare agrees it is one SELECT, the read-only instance
// with its configuration locked, the request's timeout).
func (e *Engine) Profile(ctx context.Context, req engine.Request, p engine.ProfileRequest) (engine.ProfileResult, error) {
	var sample int64
	if _, large := e.policy.LargeColumn(guard.NamesFold, guard.Table{Schema: p.Relation.Schema, Name: p.Relation.Name}); large {
		sample = engine.ProfileSampleRows
	}
	plan := engine.ComposeProfile(Dialect, p, sample)
	res, err := e.run(ctx, plan.SQL, nil, e.catalogLimits(), req.Timeout)
	return plan.Read(res, err)
}

// UnprofilableSQL lists the sequences and macros of the file's own catalog
// (temporary ones left out): named objects that hold no rows.
const UnprofilableSQL = `SELECT schema_name, name, kind FROM (
  SELECT schema_name, sequence_name AS name, 'SEQUENCE' AS kind
  FROM duckdb_sequences() WHERE database_name = current_database() AND NOT temporary
  UNION ALL
  SELECT DISTINCT schema_name, function_name, upper(function_type)
  FROM duckdb_functions() WHERE database_name = current_database() AND NOT internal
   AND function_type IN ('macro', 'table_macro')
) ORDER BY schema_name, name`

// Unprofilable lists the readable sequences and macros (one statement).
func (e *Engine) Unprofilable(ctx context.Context, req engine.Request) (engine.Catalog, error) {
	var cat engine.Catalog
	set, err := e.catalogRead(ctx, req.Timeout, UnprofilableSQL, nil, &cat)
	if err != nil {
		return cat, err
	}
	for _, row := range set.Rows {
		schema, name, kind := text(row[0]), text(row[1]), text(row[2])
		if !e.readable(schema, name) {
			cat.Unreadable++
			continue
		}
		cat.Relations = append(cat.Relations, contracts.Relation{Schema: schema, Name: name, EngineKind: kind})
	}
	return cat, nil
}
